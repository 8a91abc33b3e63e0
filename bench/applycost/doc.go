// Package applycost holds Go benchmarks of what one replica's state
// machine spends applying a stream-set object (fsm CommitObject) of N
// streams, against N single appends (CommitAppend): the apply share of
// every node's CPU in metad-bench's commit-object workload, measured
// without the network, the log store or a shared machine's noise.
//
//	go test ./bench/applycost -run '^$' -bench . -benchmem -cpuprofile /tmp/apply.pprof
//
// Each operation applies one command through fsm.Machine.Apply, request
// id and all, as raftstore does after decoding it; the command is encoded
// and decoded first, as it travels through the Raft log. PERFORMANCE.md
// ("Stream-set objects") has figures.
package applycost
