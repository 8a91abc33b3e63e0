package membership

import (
	"time"

	pure "github.com/metad/metad/membership/plan"
)

// The values the agent reports and the planner decides on live in the
// pure package membership/plan; these are their names here.
type (
	// Status is a member's state in this node's gossip view.
	Status = pure.Status
	// Member is one server in this node's gossip view.
	Member = pure.Member
	// Meta is what a node tells the others about itself through gossip.
	Meta = pure.Meta
	// Server is one server of the raft configuration.
	Server = pure.Server
	// ServerStats is what the leader needs from a server to judge its
	// health.
	ServerStats = pure.ServerStats
)

// The member statuses.
const (
	StatusAlive = pure.StatusAlive
	StatusDead  = pure.StatusDead
	StatusLeft  = pure.StatusLeft
)

// The planner's own vocabulary, as the reconcile loop uses it.
type (
	holdClass    = pure.HoldClass
	decision     = pure.Decision
	health       = pure.Health
	healthLimits = pure.HealthLimits
	planInput    = pure.Input
)

const (
	actUpdateAddress = pure.ActUpdateAddress
	actRemove        = pure.ActRemove
	actAdd           = pure.ActAdd
	actPromote       = pure.ActPromote
	actHold          = pure.ActHold

	holdNone         = pure.HoldNone
	holdDeadWaiting  = pure.HoldDeadWaiting
	holdQuorumGuard  = pure.HoldQuorumGuard
	holdMinQuorum    = pure.HoldMinQuorum
	holdAddrConflict = pure.HoldAddrConflict
	holdNotStable    = pure.HoldNotStable
	holdTombstoned   = pure.HoldTombstoned
	holdForeign      = pure.HoldForeign
	holdUnprobed     = pure.HoldUnprobed
)

func plan(in planInput) (acts, holds []decision) { return pure.Plan(in) }

func judgeHealth(st *ServerStats, leaderTerm, leaderIndex uint64, lim healthLimits) (bool, string) {
	return pure.JudgeHealth(st, leaderTerm, leaderIndex, lim)
}

func trackHealth(prev health, seen bool, healthy bool, reason string, now time.Time) health {
	return pure.TrackHealth(prev, seen, healthy, reason, now)
}
