package node

import "github.com/metad/metad/clock"

// serverClock is the time source of the server's own loops in this package
// (the leader log, the cluster id and removal watches, the readiness
// announcement, the file reloads) and of the times they record: one
// clock, never the time package. Socket deadlines, which bound real I/O,
// read clock.Real.
var serverClock clock.Clock = clock.Real
