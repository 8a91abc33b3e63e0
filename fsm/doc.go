// Package fsm is metad's replicated state machine: the whole state of
// streams, objects, pins and membership, and every mutation of them, as a
// pure function of the commands applied to it.
//
// # What it holds
//
// Per stream: its snapshot (name, writer epoch, status, version), the
// committed end and trim point, the append evidence not yet wholly trimmed,
// and per read view the live generations of index records. Besides streams:
// the object registry (key → identity, status, reference and pin counts),
// pins, the request-id dedup table, and from feature level 2 the
// tombstones of servers an operator removed (tombstone.go) and the
// cluster's id (clusterid.go, set once).
//
// # How it changes
//
// Every Raft entry is one fsmpb.Command; Apply dispatches its oneof in one
// switch to one small handler per operation. A handler validates first and
// mutates only once nothing can refuse, so a command is all or nothing.
// That includes a stream-set object (streamset.go, level 4): one command
// appending to many streams checks every append before it commits any,
// and refuses naming every append it refused.
// A refusal is a Result with a Rejection (code, field, message): it is part
// of the replicated outcome and is identical on every replica. An entry
// this binary cannot apply — undecodable, an unknown operation, a feature
// level above MaxLevel — is not a refusal: ApplyEntry returns
// ErrUnsupported and the replica stops until it is upgraded (see
// ApplyEntry for why). ApplyEntryCommand (observe.go) is ApplyEntry that
// also returns the decoded command, for an observer of what was applied
// (package watch derives stream events from the command and its Result).
//
// # Feature levels
//
// The state holds the cluster's feature level (level.go): which command
// kinds may be proposed and which rules Apply enforces. It only grows, and
// rules that change with it are switched on the state's level, so replicas
// of mixed releases and replays of old logs all decide alike (rolling
// upgrades, G15).
//
// Nothing here reads a clock, touches the network or disk, logs, or starts a
// goroutine. Time comes from the command's stamp (the leader's clock when it
// proposed); machine time is the largest stamp seen, so it never goes back.
// Metadata versions are Raft indexes, passed to Apply.
//
// # Reading
//
// Queries (query.go) are O(log n) lookups over B-trees: the record covering
// an offset, the evidence covering it, an object, a pin. Package resolver
// plans reads over them. Clone gives a copy-on-write point-in-time copy that
// can be read, hashed or written as a snapshot while Apply goes on.
//
// # Memory
//
// Index records and append evidence are nearly all of a large state, so
// their layout is the state's size. Both are stored by value in the
// B-trees' leaves, 56 bytes each: offsets, bytes, versions, and one
// pointer to a target (index.go) holding the object reference and, for a
// sparse record, its survivors. Records and evidence naming the same
// object share the registry's target (object.target), so the object's key
// and identity are kept once, not per record. Targets, like records, are
// never changed once in a tree: Clone shares the trees' nodes between
// copies, so a change is always a new value put in by ReplaceOrInsert.
//
// google/btree splits a full node in half, so items inserted in key order
// leave leaves half empty. Items that arrive together — the parts of
// PublishGeneration, and restore's chunks of records and evidence — go in
// by insertSorted, every other one first, which fills leaves instead
// (about 70 bytes per published record in all). Single appends still
// arrive one at a time and fill leaves half until the next restore.
//
// # Snapshots
//
// WriteSnapshot writes a 64-byte header (magic, format, applied index,
// record count, SHA-256) and then typed records in one canonical order, so
// the same state always gives the same bytes and replicas can be compared
// by StateHash. Index records and evidence are encoded by hand into the
// bytes proto's deterministic marshalling gives (snapshot_encode.go);
// other records go through proto. Restore verifies everything — the header
// CRC, count, SHA-256, canonical order, and every invariant including each
// record's checksum — before returning a machine the caller may swap in.
// It reads index records and evidence with a decoder of its own
// (restore_decode.go) that declines anything but the writer's shape, which
// then goes through proto.Unmarshal, so both paths accept and refuse
// alike. DiffSnapshots walks two snapshots side by side in that order and
// names every record that differs: the hash says two replicas differ, the
// diff says where.
//
// # State in memory or in a store
//
// New gives a machine wholly in memory; Open gives one whose append
// evidence and index records live in a kv.Store (kvstate.go, kvset.go),
// while the rest, bounded by streams and objects rather than by records,
// stays in memory and is written through to the store at the end of each
// Apply. Both run the same decisions over orderedSet (set.go); the
// conformance suite (conformance_test.go) runs the scripts, the model and
// the fuzz corpus on both. The machine never commits: its owner commits
// the store once per batch of applies, with its own keys (PrefixOwner).
//
// # Invariants
//
// Each is stated as an "Invariant:" comment on the field it constrains and
// checked by CheckInvariants; WithInvariantChecks runs that check, and a
// check that nothing went backwards (G3), after every Apply.
package fsm
