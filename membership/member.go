package membership

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// forgetAfter is how long a dead or left member stays in the table. It
// outlives any sane DeadServerTimeout so the leader's removal decision and
// the reconnect attempts still see it; serf keeps its failed members for
// 72h for the same reason.
const forgetAfter = maxRemovalTimeout + time.Hour

// table is the gossip view, fed by memberlist's event callbacks. Those run
// on memberlist's goroutines with its node lock held, so every method here
// is short and never calls back into memberlist.
type table struct {
	log   *slog.Logger
	now   func() time.Time
	nudge func() // wakes the agent loop; must not block

	mu sync.Mutex // guards the fields below
	// members holds only nodes whose name and metadata decoded.
	// Invariant: members[id].ID == id, and every entry has a valid id,
	// valid metadata and a known status (checkInvariants).
	members map[string]Member
	// badSeen remembers (name, metadata hash) pairs already logged as
	// invalid, so a misbehaving node is logged once, not per gossip round.
	badSeen map[string]uint64
	// leaving holds ids that told this node directly (leaveMsg) that they
	// are leaving: their next "dead" is a leave even if the Leaving flag in
	// their metadata has not reached this node yet (gossip may deliver the
	// leave before the metadata update). Cleared when the node is back.
	leaving map[string]bool
}

var _ memberlist.EventDelegate = (*table)(nil)

func newTable(log *slog.Logger, now func() time.Time, nudge func()) *table {
	return &table{log: log, now: now, nudge: nudge,
		members: make(map[string]Member), badSeen: make(map[string]uint64), leaving: make(map[string]bool)}
}

func (t *table) NotifyJoin(n *memberlist.Node)   { t.upsert(n, StatusAlive) }
func (t *table) NotifyUpdate(n *memberlist.Node) { t.upsert(n, StatusAlive) }

// NotifyLeave reports both failures and graceful leaves; which one it was
// comes from the node's metadata (see Meta.Leaving), since the Node state
// memberlist passes is never updated.
func (t *table) NotifyLeave(n *memberlist.Node) { t.upsert(n, StatusDead) }

// upsert records n with status, or drops it if its name or metadata is
// invalid: a node nobody can decode must not count for bootstrap nor be
// added to raft, and must crash no one.
func (t *table) upsert(n *memberlist.Node, status Status) {
	meta, err := DecodeMeta(n.Meta)
	if err == nil {
		err = validateID(n.Name)
	}
	gossip := net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
	t.mu.Lock()
	if err != nil {
		t.dropBadLocked(n, gossip, err)
		t.mu.Unlock()
		return
	}
	delete(t.badSeen, n.Name)
	old, found := t.members[n.Name]
	switch {
	case meta.Leaving || (status == StatusDead && t.leaving[n.Name]):
		// Announced its leave: left from now on, even while memberlist
		// still has it alive for the moment its leave takes to spread.
		status = StatusLeft
	case status == StatusAlive && found && old.Status != StatusAlive:
		delete(t.leaving, n.Name) // back after a leave or a failure
	}
	m := Member{ID: n.Name, GossipAddr: gossip, Status: status, Since: old.Since, Meta: meta}
	if !found || old.Status != status {
		m.Since = t.now()
	}
	t.members[n.Name] = m
	t.mu.Unlock()
	if !found || old.Status != status || old.GossipAddr != gossip || old.Meta != meta {
		t.log.Info("gossip member changed", "id", m.ID, "status", status.String(),
			"gossip", gossip, "raft", meta.RaftAddr, "grpc", meta.GRPCAddr,
			"expect", meta.Expect, "bootstrapped", meta.Bootstrapped)
	}
	t.nudge()
}

func (t *table) dropBadLocked(n *memberlist.Node, gossip string, err error) {
	h := fnv.New64a()
	h.Write(n.Meta)
	sum := h.Sum64()
	_, had := t.members[n.Name]
	delete(t.members, n.Name)
	if prev, seen := t.badSeen[n.Name]; !seen || prev != sum || had {
		t.badSeen[n.Name] = sum
		t.log.Warn("ignoring gossip member with invalid name or metadata",
			"name", n.Name, "gossip", gossip, "meta_len", len(n.Meta), "err", err)
	}
	if had {
		t.nudge()
	}
}

// leaveMsgPrefix starts the user message a leaving node sends each peer
// directly (memberlist SendReliable) before it leaves; the node id follows.
// Releases that do not know it ignore user messages.
const leaveMsgPrefix = "metad-leaving:"

// noteMessage handles a user message from a peer: only leaveMsg is known.
func (t *table) noteMessage(b []byte) {
	id, ok := strings.CutPrefix(string(b), leaveMsgPrefix)
	if !ok || validateID(id) != nil {
		return
	}
	t.mu.Lock()
	t.leaving[id] = true
	m, found := t.members[id]
	if found && m.Status == StatusDead {
		m.Status, m.Since = StatusLeft, t.now()
		t.members[id] = m
	}
	t.mu.Unlock()
	if found && m.Status == StatusLeft {
		t.nudge()
	}
}

// snapshot returns the members sorted by id.
func (t *table) snapshot() []Member {
	t.mu.Lock()
	out := make([]Member, 0, len(t.members))
	for _, m := range t.members {
		out = append(out, m)
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (t *table) lookup(id string) (Member, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.members[id]
	return m, ok
}

// checkInvariants verifies the table's invariants; tests call it.
func (t *table) checkInvariants() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, m := range t.members {
		if m.ID != id {
			return fmt.Errorf("member keyed %q has id %q", id, m.ID)
		}
		if err := validateID(m.ID); err != nil {
			return fmt.Errorf("member %q: %w", id, err)
		}
		if err := validateMeta(m.Meta); err != nil {
			return fmt.Errorf("member %q: %w", id, err)
		}
		if m.Status != StatusAlive && m.Status != StatusDead && m.Status != StatusLeft {
			return fmt.Errorf("member %q: status %v", id, m.Status)
		}
	}
	return nil
}

// forget drops members dead or left for longer than forgetAfter.
func (t *table) forget() {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, m := range t.members {
		if m.Status != StatusAlive && now.Sub(m.Since) > forgetAfter {
			delete(t.members, id)
		}
	}
}
