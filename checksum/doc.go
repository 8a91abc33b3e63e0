// Package checksum computes and checks the two checksums a record of metad
// carries.
//
// A data checksum is the CRC-32C (Castagnoli, as Kafka's record batches
// use) of the exact bytes of one append's byte range. The writer computes
// it before it commits the append; the server never sees the bytes and
// only carries the value; every reader checks it on every ranged read,
// whatever the store. A data checksum is either set, or absent (Data.Set
// false): records committed before the cluster's feature level 3 carry
// none and are read unchecked.
//
// A record checksum (RecordSum, record.go) is the CRC-32C of an index
// record's canonical fields, its data checksum included: the writer sets
// it, the state machine refuses a record whose fields do not match it, and
// the resolver admits only records that verify.
//
// It is a leaf: the state machine, the object stores, the client and the
// tools all import it, and it imports nothing of the project's, so a
// writer builds records without importing the server's state machine.
package checksum
