// Package watch turns the apply path into per-stream change feeds
// (G14).
//
// Events are derived by the pure package watch/derive: from one applied
// command, its fsm Result and the stream's state afterwards, the one Event
// the command made, if any, carrying its Version, the Raft index of its
// command, which orders a stream's events and is where a watcher resumes.
//
// Hub (hub.go) is the delivery: raftstore calls it after every Apply
// (raftstore.ApplyObserver) under the state machine's write lock. It keeps,
// per stream, a ring of the last Config.History events, and hands each new
// event to the watchers of that stream only, through a bounded queue per
// watcher (Config.Buffer): a watcher whose queue is full is cut off with
// ErrSlowConsumer instead of holding events without bound, so one slow
// consumer never slows the apply path or the others. Cost is O(changes ×
// watchers of the changed stream), never O(all watchers).
//
// Subscribe is called under the machine's read lock (inside a
// raftstore Read function), so the backlog it returns from the ring and the
// live events that follow meet exactly: no gap, no duplicate. A version
// older than what the hub holds for the stream (evicted from the ring, or
// before the snapshot this node restored: after a restart raft restores
// the snapshot and replays the log after it, rebuilding the rings from
// there) gets ErrCompacted, unless it is at or past the newest version the
// state shows for the stream, in which case nothing was missed.
//
// Known limit: a generation retired while this node did not hold the
// stream's history leaves no trace in the state, so a resume from before
// it, at or past every version the state still shows, is not refused and
// does not see the retirement.
package watch
