package client

import "github.com/metad/metad/clock"

// wall is the client's time source for what it waits on outside the
// process: retry backoffs of calls to the servers and the object store,
// their deadlines, leader rediscovery, the latencies its metrics measure.
// Those are real time, and read this one clock.Real, never the time
// package. The Writer's flush timing is the injected WriterConfig.Clock.
var wall clock.Clock = clock.Real
