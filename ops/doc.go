// Package ops tests metad the way an operator runs it: real `metad`
// processes (internal/proc) driven through the binary's own commands and
// endpoints. It holds no code, only the tests of the operator's surface:
//
//   - /metrics on the HTTP admin address carries raft's own series (bridged
//     from go-metrics) and metad's (metad_raft_*, metad_grpc_*, ...), and
//     /healthz, /readyz and opt-in pprof answer as documented;
//   - `metad snapshot save` from a 3-node cluster under writes, `inspect`
//     (which catches a corrupted file) and `restore` into a new single
//     node that serves the identical state;
//   - a rolling SIGTERM restart of every node under writes loses no
//     acknowledged write and keeps the cluster writable throughout;
//   - `metad data inspect` and `metad data recover` bring back a cluster
//     whose majority is lost, from the survivor, with every write it had;
//   - every series the alert rules and dashboard of examples/monitoring
//     select is one a running server exports;
//   - `metad raft list-peers | remove-peer | transfer-leader`, `metad
//     members`, and systemd's notify protocol (READY=1, STOPPING=1).
//
// The tests take tens of seconds each (processes, elections, restarts);
// `go test -short` skips the longest.
package ops
