// Package statestore holds Go benchmarks that compare cockroachdb/pebble
// v2 and bbolt as metad's on-disk state store (issue 24's first step):
// apply cost, resolve cost, the cost of a consistent snapshot point and of
// streaming the state out of it while writes go on, install (build a store
// from a stream, swap it in), disk bytes per record and memory after load.
//
// It models the state fsm keeps, not fsm itself: index records keyed
// (stream, view, generation, start), big-endian so that key order is the
// order fsm's B-trees iterate in, with a ~150-byte value (object key and
// identity, byte range, version, CRCs, status), plus the applied index.
// Every apply is one atomic batch of its puts and the applied index,
// committed without fsync: the Raft log is the write-ahead log, so after a
// crash the store may be behind the log, never ahead, and the node replays
// the log from the applied index the store holds.
//
// It is its own Go module so that metad's go.mod, and the main module's
// CI, never compile pebble or bbolt before one of them is chosen.
//
//	cd bench/statestore && go test -run '^$' -bench . -count 3 -timeout 2h
//
// README.md has the figures, the exact commands and the recommendation.
package statestore
