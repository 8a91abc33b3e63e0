package plan

import (
	"fmt"
	"sort"
	"time"
)

// ActionKind names one decision of the planner.
type ActionKind int

const (
	// actUpdateAddress re-adds a server under its id at its new raft
	// address, keeping its suffrage.
	ActUpdateAddress ActionKind = iota + 1
	// actRemove removes a long-dead server from raft.
	ActRemove
	// actAdd adds an alive gossip server to raft as a non-voter.
	ActAdd
	// actPromote makes a caught-up, stable non-voter a voter.
	ActPromote
	// actHold is a decision not to act (waiting, or a safety guard).
	ActHold
)

func (k ActionKind) String() string {
	switch k {
	case ActUpdateAddress:
		return "update-address"
	case ActRemove:
		return "remove"
	case ActAdd:
		return "add-nonvoter"
	case ActPromote:
		return "promote"
	case ActHold:
		return "hold"
	default:
		return fmt.Sprintf("action(%d)", int(k))
	}
}

// HoldClass says why the planner held back; with the kind and server it
// keys the "log each decision once" memory.
type HoldClass string

const (
	HoldNone         HoldClass = ""
	HoldDeadWaiting  HoldClass = "dead-waiting"
	HoldQuorumGuard  HoldClass = "quorum-guard"
	HoldMinQuorum    HoldClass = "min-quorum"
	HoldAddrConflict HoldClass = "address-conflict"
	HoldNotStable    HoldClass = "not-stable"
	HoldTombstoned   HoldClass = "tombstoned"
	HoldForeign      HoldClass = "foreign-cluster"
	HoldUnprobed     HoldClass = "cluster-id-unknown"
)

// Decision is one planner output. Reason is a sentence for the log.
type Decision struct {
	Kind   ActionKind
	Hold   HoldClass
	ID     string
	Addr   string
	Voter  bool // actUpdateAddress: the server is a voter and stays one
	Reason string
}

// Key identifies a decision for log de-duplication: the same decision made
// again on the next round is not news, a different one is.
func (d Decision) Key() string {
	return fmt.Sprintf("%s|%s|%s|%s", d.Kind, d.Hold, d.ID, d.Addr)
}

// Health is a non-voter's health as the current leader tracks it.
type Health struct {
	Healthy bool
	Since   time.Time // when Healthy last changed (or was first seen)
	Reason  string    // why unhealthy, for the log
}

// Input is everything the planner looks at: values only, no clock.
type Input struct {
	Now    time.Time
	Leader string // this node; never removed
	// Servers is the latest raft configuration.
	Servers []Server
	// Members is the gossip view (valid metadata only).
	Members []Member
	// AbsentSince says since when each configured server has been missing
	// from the gossip view altogether (e.g. forgotten by memberlist before
	// this node became leader); it then counts as dead since that time.
	AbsentSince map[string]time.Time
	// Health is the tracked health of non-voters.
	Health map[string]Health

	// DeadServerTimeout applies to a server dead or absent in gossip,
	// LeftServerTimeout to one that announced a graceful leave.
	DeadServerTimeout       time.Duration
	LeftServerTimeout       time.Duration
	ServerStabilizationTime time.Duration
	// MinQuorum and BootstrapExpect are floors: no voter is removed when
	// fewer than the larger of the two would remain.
	MinQuorum       int
	BootstrapExpect int
	// Removed says whether a member may not be (re-)added: its
	// incarnation is tombstoned (remove-peer at level 2), or, at level 1,
	// it was removed by remove-peer recently (the leader's memory). It
	// gives the reason for the log; nil means nothing is removed.
	Removed func(m Member) (string, bool)
	// Foreign says whether a member may not be added because it belongs
	// to another cluster (HoldForeign) or has not said which cluster it
	// belongs to yet (HoldUnprobed), with the reason (membership/identity.go);
	// HoldNone, or a nil Foreign, lets it be added.
	Foreign func(m Member) (string, HoldClass)
}

// Plan computes the leader's membership decisions, as raft-autopilot's
// planner does, under these rules:
//
//  1. Servers are keyed by id. An alive member whose advertised raft
//     address differs from its configured one is updated in place
//     (same id, same suffrage), unless another id holds the new address.
//  2. A server dead (or absent) in gossip for at least DeadServerTimeout,
//     or left (a graceful leave) for at least LeftServerTimeout, is
//     removed: non-voters freely, voters only if the
//     voters alive in gossip are a quorum of the current voters (i.e. the
//     dead voters do not exceed the configuration's failure tolerance
//     (V-1)/2; otherwise the cluster has lost quorum and removing would
//     only act on a stale view) and at least max(MinQuorum,
//     BootstrapExpect) voters remain. A server alive in gossip is never
//     removed, however long it has been behind (it may be restoring a
//     large snapshot). The leader itself is never removed.
//  3. An alive member not in the configuration is added as a non-voter,
//     unless Removed says it was removed by an operator (tombstone) or
//     Foreign says it is (or may be) another cluster's server.
//  4. A non-voter alive and healthy for ServerStabilizationTime is
//     promoted to voter.
//
// Actions come back in that priority order, each sorted by id; the caller
// applies the first and plans again with a fresh configuration, so every
// rule is re-checked after each change. Holds are decisions not to act.
func Plan(in Input) (acts, holds []Decision) {
	members := make(map[string]Member, len(in.Members))
	for _, m := range in.Members {
		members[m.ID] = m
	}
	servers := append([]Server(nil), in.Servers...)
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	owner := make(map[string]string, len(servers))
	for _, s := range servers {
		owner[s.Address] = s.ID
	}
	p := planner{in: in, members: members, servers: servers, owner: owner}
	p.updateAddresses()
	p.removeDead()
	p.addNew()
	p.promote()
	return p.acts, p.holds
}

type planner struct {
	in      Input
	members map[string]Member
	servers []Server // sorted by id
	owner   map[string]string
	acts    []Decision
	holds   []Decision
}

func (p *planner) act(d Decision)  { p.acts = append(p.acts, d) }
func (p *planner) hold(d Decision) { d.Kind = ActHold; p.holds = append(p.holds, d) }

func (p *planner) updateAddresses() {
	for _, s := range p.servers {
		m, ok := p.members[s.ID]
		if !ok || m.Status != StatusAlive || m.Meta.RaftAddr == s.Address {
			continue
		}
		addr := m.Meta.RaftAddr
		if p.in.Foreign != nil {
			if why, class := p.in.Foreign(m); class != HoldNone {
				p.hold(Decision{Hold: class, ID: s.ID, Addr: addr, Reason: fmt.Sprintf(
					"not moving %s to raft address %s: %s", s.ID, addr, why)})
				continue
			}
		}
		if o, taken := p.owner[addr]; taken {
			p.hold(Decision{Hold: HoldAddrConflict, ID: s.ID, Addr: addr, Reason: fmt.Sprintf(
				"raft address of %s changed from %s to %s, but %s holds that address in the raft configuration; waiting for its removal",
				s.ID, s.Address, addr, o)})
			continue
		}
		p.act(Decision{Kind: ActUpdateAddress, ID: s.ID, Addr: addr, Voter: s.Voter,
			Reason: fmt.Sprintf("server %s now advertises raft address %s (was %s); same id, same server", s.ID, addr, s.Address)})
	}
}

// downSince reports whether configured server s is down in gossip (dead,
// left or absent) and since when.
func (p *planner) downSince(s Server) (time.Time, string, bool) {
	m, ok := p.members[s.ID]
	if !ok {
		since, known := p.in.AbsentSince[s.ID]
		if !known {
			since = p.in.Now // first noticed now: the timeout starts now
		}
		return since, "absent from gossip", true
	}
	if m.Status == StatusAlive {
		return time.Time{}, "", false
	}
	return m.Since, m.Status.String() + " in gossip", true
}

// removalTimeout is how long s must have been down before it is removed:
// a graceful leave is a planned absence (every SIGTERM leaves), a failure
// is not, and the two get their own windows.
func (p *planner) removalTimeout(s Server) time.Duration {
	if m, ok := p.members[s.ID]; ok && m.Status == StatusLeft {
		return p.in.LeftServerTimeout
	}
	return p.in.DeadServerTimeout
}

func (p *planner) removeDead() {
	voters, deadVoters := 0, 0
	for _, s := range p.servers {
		if s.Voter {
			voters++
			if _, _, down := p.downSince(s); down {
				deadVoters++
			}
		}
	}
	tolerance := (voters - 1) / 2
	floor := max(p.in.MinQuorum, p.in.BootstrapExpect)
	// Non-voters first: removing them never changes the quorum.
	for _, wantVoter := range []bool{false, true} {
		for _, s := range p.servers {
			if (s.Voter) != wantVoter || s.ID == p.in.Leader {
				continue
			}
			since, how, down := p.downSince(s)
			if !down {
				continue
			}
			d := Decision{ID: s.ID, Addr: s.Address}
			elapsed := p.in.Now.Sub(since)
			timeout := p.removalTimeout(s)
			switch {
			case elapsed < timeout:
				d.Hold = HoldDeadWaiting
				d.Reason = fmt.Sprintf("%s is %s; removing it from raft after %v unless it returns",
					s.ID, how, timeout)
				p.hold(d)
			case wantVoter && deadVoters > tolerance:
				d.Hold = HoldQuorumGuard
				d.Reason = fmt.Sprintf("not removing voter %s (%s for %v): %d of %d voters are down, more than the %d the configuration tolerates; quorum is lost, so this view may be stale",
					s.ID, how, elapsed.Round(time.Millisecond), deadVoters, voters, tolerance)
				p.hold(d)
			case wantVoter && voters-1 < floor:
				d.Hold = HoldMinQuorum
				d.Reason = fmt.Sprintf("not removing voter %s (%s for %v): %d voters would remain, below the floor %d (max of MinQuorum %d and bootstrap-expect %d)",
					s.ID, how, elapsed.Round(time.Millisecond), voters-1, floor, p.in.MinQuorum, p.in.BootstrapExpect)
				p.hold(d)
			default:
				d.Kind = ActRemove
				d.Reason = fmt.Sprintf("removing %s from raft: %s for %v (timeout %v)",
					s.ID, how, elapsed.Round(time.Millisecond), timeout)
				p.act(d)
				if wantVoter {
					voters-- // later removals this round see the smaller configuration
					deadVoters--
					tolerance = (voters - 1) / 2
				}
			}
		}
	}
}

func (p *planner) addNew() {
	inConfig := make(map[string]bool, len(p.servers))
	for _, s := range p.servers {
		inConfig[s.ID] = true
	}
	ids := make([]string, 0, len(p.members))
	for id := range p.members {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		m := p.members[id]
		if inConfig[id] || m.Status != StatusAlive {
			continue
		}
		addr := m.Meta.RaftAddr
		if p.in.Removed != nil {
			if why, removed := p.in.Removed(m); removed {
				p.hold(Decision{Hold: HoldTombstoned, ID: id, Addr: addr, Reason: fmt.Sprintf(
					"not adding %s: %s", id, why)})
				continue
			}
		}
		if p.in.Foreign != nil {
			if why, class := p.in.Foreign(m); class != HoldNone {
				p.hold(Decision{Hold: class, ID: id, Addr: addr, Reason: fmt.Sprintf("not adding %s: %s", id, why)})
				continue
			}
		}
		if o, taken := p.owner[addr]; taken {
			p.hold(Decision{Hold: HoldAddrConflict, ID: id, Addr: addr, Reason: fmt.Sprintf(
				"not adding %s: its raft address %s is held by %s in the raft configuration; waiting for %s's removal",
				id, addr, o, o)})
			continue
		}
		p.act(Decision{Kind: ActAdd, ID: id, Addr: addr, Reason: fmt.Sprintf(
			"adding %s at %s as a non-voter: alive in gossip, not in the raft configuration", id, addr)})
	}
}

func (p *planner) promote() {
	for _, s := range p.servers {
		m, ok := p.members[s.ID]
		if s.Voter || !ok || m.Status != StatusAlive {
			continue
		}
		h, tracked := p.in.Health[s.ID]
		stableFor := p.in.Now.Sub(h.Since)
		if !tracked || !h.Healthy || stableFor < p.in.ServerStabilizationTime {
			why := h.Reason
			if !tracked {
				why = "no health data yet"
			} else if h.Healthy {
				why = fmt.Sprintf("healthy for %v of %v", stableFor.Round(time.Millisecond), p.in.ServerStabilizationTime)
			}
			p.hold(Decision{Hold: HoldNotStable, ID: s.ID, Addr: s.Address, Reason: fmt.Sprintf(
				"not promoting non-voter %s yet: %s", s.ID, why)})
			continue
		}
		p.act(Decision{Kind: ActPromote, ID: s.ID, Addr: s.Address, Reason: fmt.Sprintf(
			"promoting %s to voter: caught up and healthy for %v (stabilization %v)",
			s.ID, stableFor.Round(time.Millisecond), p.in.ServerStabilizationTime)})
	}
}

// HealthLimits are the autopilot thresholds a non-voter must meet.
type HealthLimits struct {
	LastContactThreshold time.Duration
	MaxTrailingLogs      uint64
}

// JudgeHealth applies raft-autopilot's health rule (ServerState.isHealthy)
// to a non-voter's stats against the leader's last term and index: recent
// contact with the leader, same term, and not too far behind.
func JudgeHealth(st *ServerStats, leaderTerm, leaderIndex uint64, lim HealthLimits) (bool, string) {
	switch {
	case st == nil:
		return false, "no stats"
	case st.LastContact < 0:
		return false, "never contacted by a leader"
	case st.LastContact > lim.LastContactThreshold:
		return false, fmt.Sprintf("last contact %v ago, over %v", st.LastContact, lim.LastContactThreshold)
	case st.LastTerm != leaderTerm:
		return false, fmt.Sprintf("last log term %d, leader's is %d", st.LastTerm, leaderTerm)
	case st.LastIndex+lim.MaxTrailingLogs < leaderIndex:
		return false, fmt.Sprintf("last log index %d, leader's %d, more than %d behind",
			st.LastIndex, leaderIndex, lim.MaxTrailingLogs)
	default:
		return true, "healthy"
	}
}

// TrackHealth returns the next health of a server given its previous one:
// Since moves only when Healthy flips, as autopilot's StableSince does.
func TrackHealth(prev Health, seen bool, healthy bool, reason string, now time.Time) Health {
	if seen && prev.Healthy == healthy {
		prev.Reason = reason
		return prev
	}
	return Health{Healthy: healthy, Since: now, Reason: reason}
}
