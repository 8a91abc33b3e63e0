// Package plan is membership's pure planner: from the leader's raft
// configuration, its gossip view and the times it has tracked, Plan
// decides which server to update, remove, add or promote, and which
// decisions to hold back and why (raft-autopilot's planner, under the
// rules on Plan). JudgeHealth and TrackHealth apply autopilot's health
// rule to a non-voter. Values only, no clock: the caller passes Now, and
// the architecture test keeps the package free of clocks, I/O and
// goroutines. Package membership gathers the inputs, applies the first
// action and plans again; it uses these types (Member, Server, Status,
// Meta, ServerStats) under the same names.
package plan
