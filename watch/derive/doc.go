// Package derive is watch's pure part: from one applied command, its fsm
// Result and the stream's state afterwards, Derive yields the one Event the
// command made, if any (DeriveObject: a stream-set object yields one
// Appended event per stream it appended to, all at its version): a writer
// opened, an append committed (range, object, bytes, new end), a trim, a
// seal, a generation published or retired, the stream deleted. Every event
// carries its Version, the Raft index of its command, which orders a
// stream's events and is where a watcher resumes. Refused commands and
// deduplicated retries yield nothing. Values in, values out: no clock, no
// I/O, no goroutines (the architecture test keeps it so). Package watch
// delivers the events.
package derive
