package membership

import (
	"fmt"
	"sort"
	"strings"
)

// bootstrapVerdict is what a forming node should do now.
type bootstrapVerdict int

const (
	// bootstrapWait: not yet (too few servers, or a conflict an operator
	// may fix); decide again on the next membership change.
	bootstrapWait bootstrapVerdict = iota + 1
	// bootstrapNow: bootstrap raft with the returned servers.
	bootstrapNow
	// bootstrapNever: a peer already belongs to a cluster; this node is
	// joining it and waits for the leader to add it. Final.
	bootstrapNever
)

// bootstrapDecision is decideBootstrap's answer. Reason is a complete
// sentence for the log; Conflict marks reasons an operator must fix
// (logged at ERROR rather than INFO).
type bootstrapDecision struct {
	Verdict  bootstrapVerdict
	Servers  []Server
	Reason   string
	Conflict bool
}

// decideBootstrap applies Consul's maybeBootstrap rule, tightened: a node
// expecting n servers bootstraps only when it sees exactly n alive servers
// (itself included), all declaring expect n, none already bootstrapped.
// The configuration is those servers sorted by id, all voters, so every
// one of the n nodes computes the same one and bootstrapping on all of
// them at once is harmless (hashicorp/raft bootstraps identical
// configurations safely; a node that already has state refuses).
//
// Why exactly n and not "at least n" as in Consul: with more than n fresh
// servers two nodes could pick different n-subsets and form two clusters.
// Refusing keeps the misconfiguration visible instead.
//
// members is the gossip view (any order); self is this node's id.
func decideBootstrap(self string, expect int, members []Member) bootstrapDecision {
	var alive []Member
	selfSeen := false
	for _, m := range members {
		if m.Status != StatusAlive {
			continue
		}
		if m.Meta.Bootstrapped && m.ID != self {
			return bootstrapDecision{Verdict: bootstrapNever, Reason: fmt.Sprintf(
				"peer %s already belongs to a raft cluster; not bootstrapping, waiting for its leader to add this node", m.ID)}
		}
		selfSeen = selfSeen || m.ID == self
		alive = append(alive, m)
	}
	sort.Slice(alive, func(i, j int) bool { return alive[i].ID < alive[j].ID })
	if !selfSeen {
		return bootstrapDecision{Verdict: bootstrapWait, Reason: "own gossip entry not seen yet"}
	}
	var mismatched []string
	for _, m := range alive {
		if m.Meta.Expect != expect {
			mismatched = append(mismatched, fmt.Sprintf("%s expects %d", m.ID, m.Meta.Expect))
		}
	}
	if len(mismatched) > 0 {
		return bootstrapDecision{Verdict: bootstrapWait, Conflict: true, Reason: fmt.Sprintf(
			"not bootstrapping: this node expects %d servers but %s; every node of a forming cluster must be started with the same --bootstrap-expect",
			expect, strings.Join(mismatched, ", "))}
	}
	if len(alive) < expect {
		return bootstrapDecision{Verdict: bootstrapWait, Reason: fmt.Sprintf(
			"waiting for %d more server(s) to bootstrap (%d of %d alive: %s)",
			expect-len(alive), len(alive), expect, memberIDs(alive))}
	}
	if len(alive) > expect {
		return bootstrapDecision{Verdict: bootstrapWait, Conflict: true, Reason: fmt.Sprintf(
			"not bootstrapping: %d fresh servers alive (%s) but %d expected; refusing to guess which form the cluster",
			len(alive), memberIDs(alive), expect)}
	}
	if dup := duplicateRaftAddr(alive); dup != "" {
		return bootstrapDecision{Verdict: bootstrapWait, Conflict: true, Reason: "not bootstrapping: " + dup}
	}
	servers := make([]Server, len(alive))
	for i, m := range alive {
		servers[i] = Server{ID: m.ID, Address: m.Meta.RaftAddr, Voter: true}
	}
	return bootstrapDecision{Verdict: bootstrapNow, Servers: servers, Reason: fmt.Sprintf(
		"bootstrapping raft with the %d expected servers: %s", expect, memberIDs(alive))}
}

func memberIDs(ms []Member) string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return strings.Join(ids, ",")
}

// duplicateRaftAddr describes two members advertising the same raft
// address, or returns "". raft refuses such a configuration, and it means
// two nodes were started with the same --raft-addr.
func duplicateRaftAddr(ms []Member) string {
	owner := make(map[string]string, len(ms))
	for _, m := range ms {
		if o, ok := owner[m.Meta.RaftAddr]; ok {
			return fmt.Sprintf("%s and %s both advertise raft address %s", o, m.ID, m.Meta.RaftAddr)
		}
		owner[m.Meta.RaftAddr] = m.ID
	}
	return ""
}
