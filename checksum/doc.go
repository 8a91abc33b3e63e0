// Package checksum computes and checks data checksums: the CRC-32C
// (Castagnoli, as Kafka's record batches use) of the exact bytes of one
// append's byte range. The writer computes it before it commits the append;
// the server never sees the bytes and only carries the value; every reader
// checks it on every ranged read, whatever the store.
//
// It is a leaf: the state machine, the object stores, the client and the
// tools all import it, and it imports nothing of the project's. A checksum
// is either set, or absent (Data.Set false): records committed before the
// cluster's feature level 3 carry none and are read unchecked.
package checksum
