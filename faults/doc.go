// Package faults holds metad's fault-injection hooks for the Jepsen-style
// harness: planted bugs the harness must catch, and a controllable clock
// offset for skew tests.
//
// Everything here is compiled only with the build tag metad_faults, and
// only through one seam per package: a package with planted bugs (api,
// readpath, raftstore, and node for the endpoint) has a faults_on.go,
// under the tag, that holds their code and alone imports this package,
// and a faults_off.go, the production build's, whose functions return what
// they are given (architecture_test.go's TestFaultsEnterThroughOneSeam).
// The production binary neither compiles nor links any of it. With the
// tag, METAD_FAULTS lists the planted bugs to switch on (comma-separated):
//
//	stale-read     answer reads from local state without a read index
//	skip-recheck   return a target without the linearizable recheck
//	cross-view     fall back to the other view when a resolve fails
//	lose-append    on start, drop the last log entry if it is an append
//	diverge-ID     node ID applies every CreateStream under another name
//	heartbeat-fast-path
//	               let raft run heartbeats off its main goroutine, as
//	               hashicorp/raft v1.7.3 does by default (hashicorp/raft#695:
//	               a resumed leader can write entries under the new term).
//	               Through the harness the race is rare (a resumed leader's
//	               queued command must meet the new leader's heartbeat), so
//	               only soak runs use it; raftstore's
//	               TestSteppedDownLeaderWritesNothingUnderTheNewTerm
//	               reproduces it every time
//	accept-old-incarnation
//	               a server that starts without raft state votes at once
//	               (no vote guard, raftstore/faults_on.go): a voter whose data
//	               dir was wiped is taken back as the old voter and can
//	               elect a leader that lacks a committed entry
//	half-object    the leader proposes a stream-set object (CommitObject)
//	               with only the first half of its appends and answers as
//	               if all committed (raftstore/faults_on.go): the harness's
//	               G16 must see the object in some of its streams only
//	retry-fsync    a failed write or fsync of the raft log is returned to
//	               raft and written again instead of stopping the node
//	               (raftstore/faults_on.go): after a failed fsync dropped an
//	               entry, later entries land behind the hole and are lost
//	               on restart
//
// and the HTTP admin address serves POST /debug/faults/clock-offset?d=5s,
// which shifts the wall clock this node stamps commands with.
//
// It lives at the top level, beside the packages whose seams import it,
// and imports no other package of metad (architecture_test.go).
package faults
