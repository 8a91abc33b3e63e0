package node

import "github.com/metad/metad/clock"

// serverClock is the time source of the server's own loops in this package
// (the leader log, the cluster id and removal watches, the readiness
// announcement, the file reloads, the level raise, the shutdown's waits)
// and of the times they record, and node hands it to every loop it builds
// (api, readpath, repair, gc, backup, membership, the disk guard, the RPC
// metrics): one clock, never the time package. Socket deadlines, which
// bound real I/O, read clock.Real; raftstore keeps raft's real time.
var serverClock clock.Clock = clock.Real
