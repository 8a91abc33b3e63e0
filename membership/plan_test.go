package membership

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomised membership tests (0 = time-based)")

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const testTimeout = 30 * time.Second

func voter(id string) Server {
	return Server{ID: id, Address: "raft-" + id + ":1", Voter: true}
}

func nonvoter(id string) Server {
	s := voter(id)
	s.Voter = false
	return s
}

// down returns member id in status st since d before t0+1h (the plan's now).
func down(id string, st Status, d time.Duration) Member {
	m := mem(id, st, 0, true)
	m.Since = t0.Add(time.Hour - d)
	return m
}

func alive(id string) Member { return down(id, StatusAlive, time.Hour) }

func baseInput(servers []Server, members ...Member) planInput {
	return planInput{Now: t0.Add(time.Hour), Leader: "a", Servers: servers, Members: members,
		AbsentSince: map[string]time.Time{}, Health: map[string]health{},
		DeadServerTimeout: testTimeout, LeftServerTimeout: testTimeout, ServerStabilizationTime: 10 * time.Second}
}

func describe(ds []decision) string {
	var out []string
	for _, d := range ds {
		s := d.Kind.String() + ":" + d.ID
		if d.Hold != holdNone {
			s += "(" + string(d.Hold) + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestPlan(t *testing.T) {
	V, N := voter, nonvoter
	D, L := StatusDead, StatusLeft
	long, short := testTimeout+time.Second, testTimeout-time.Second
	cases := []struct {
		name        string
		in          planInput
		acts, holds string
	}{
		{"steady state", baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b"), alive("c")), "", ""},
		{"3 voters, 2 dead long: quorum guard",
			baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), down("b", D, long), down("c", D, long)),
			"", "hold:b(quorum-guard) hold:c(quorum-guard)"},
		{"5 voters, 2 dead long: remove both, lowest id first",
			baseInput([]Server{V("a"), V("b"), V("c"), V("d"), V("e")}, alive("a"), alive("b"), alive("c"), down("d", D, long), down("e", L, long)),
			"remove:d remove:e", ""},
		{"5 voters, 3 down, 1 not yet long: guard counts all down voters",
			baseInput([]Server{V("a"), V("b"), V("c"), V("d"), V("e")}, alive("a"), alive("b"), down("c", D, short), down("d", D, long), down("e", L, long)),
			"", "hold:c(dead-waiting) hold:d(quorum-guard) hold:e(quorum-guard)"},
		{"dead for less than the timeout",
			baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b"), down("c", D, short)),
			"", "hold:c(dead-waiting)"},
		{"left is treated like dead",
			baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b"), down("c", L, long)),
			"remove:c", ""},
		{"min quorum",
			func() planInput {
				in := baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b"), down("c", D, long))
				in.MinQuorum = 3
				return in
			}(), "", "hold:c(min-quorum)"},
		{"dead non-voter removed even below min quorum",
			func() planInput {
				in := baseInput([]Server{V("a"), V("b"), V("c"), N("d")}, alive("a"), alive("b"), alive("c"), down("d", D, long))
				in.MinQuorum = 3
				return in
			}(), "remove:d", ""},
		{"non-voters removed before voters",
			baseInput([]Server{V("a"), V("b"), V("c"), V("d"), V("e"), N("f")}, alive("a"), alive("b"), alive("c"), alive("d"), down("b2", D, long), down("e", D, long), down("f", D, long)),
			"remove:f remove:e", ""},
		{"absent long enough",
			func() planInput {
				in := baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b"))
				in.AbsentSince["c"] = in.Now.Add(-long)
				return in
			}(), "remove:c", ""},
		{"absent, first noticed now",
			baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b")),
			"", "hold:c(dead-waiting)"},
		{"leader never removed",
			baseInput([]Server{V("a"), V("b"), V("c")}, down("a", D, long), alive("b"), alive("c")),
			"", ""},
		{"new alive member added as non-voter; dead newcomer ignored",
			baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b"), alive("c"), alive("e"), alive("d"), down("f", D, long)),
			"add-nonvoter:d add-nonvoter:e", ""},
		{"address change, voter",
			func() planInput {
				in := baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b"), alive("c"))
				in.Members[2].Meta.RaftAddr = "raft-c-new:1"
				return in
			}(), "update-address:c", ""},
		{"address taken by another id",
			func() planInput {
				in := baseInput([]Server{V("a"), V("b"), V("c")}, alive("a"), alive("b"), alive("c"), alive("d"))
				in.Members[2].Meta.RaftAddr = "raft-b:1"
				in.Members[3].Meta.RaftAddr = "raft-a:1"
				return in
			}(), "", "hold:c(address-conflict) hold:d(address-conflict)"},
		{"non-voter without health data",
			baseInput([]Server{V("a"), N("b")}, alive("a"), alive("b")), "", "hold:b(not-stable)"},
		{"non-voter healthy, not long enough",
			func() planInput {
				in := baseInput([]Server{V("a"), N("b")}, alive("a"), alive("b"))
				in.Health["b"] = health{Healthy: true, Since: in.Now.Add(-9 * time.Second)}
				return in
			}(), "", "hold:b(not-stable)"},
		{"non-voter unhealthy for long",
			func() planInput {
				in := baseInput([]Server{V("a"), N("b")}, alive("a"), alive("b"))
				in.Health["b"] = health{Healthy: false, Since: in.Now.Add(-time.Hour)}
				return in
			}(), "", "hold:b(not-stable)"},
		{"non-voter stable: promote",
			func() planInput {
				in := baseInput([]Server{V("a"), N("b")}, alive("a"), alive("b"))
				in.Health["b"] = health{Healthy: true, Since: in.Now.Add(-10 * time.Second)}
				return in
			}(), "promote:b", ""},
		{"priority: address, removal, add, promote",
			func() planInput {
				in := baseInput([]Server{V("a"), V("b"), V("c"), N("d")}, alive("a"), alive("b"), down("c", D, long), alive("d"), alive("e"))
				in.Members[1].Meta.RaftAddr = "raft-b2:1"
				in.Health["d"] = health{Healthy: true, Since: t0}
				return in
			}(), "update-address:b remove:c add-nonvoter:e promote:d", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acts, holds := plan(c.in)
			if got := describe(acts); got != c.acts {
				t.Errorf("acts  %q, want %q", got, c.acts)
			}
			if got := describe(holds); got != c.holds {
				t.Errorf("holds %q, want %q", got, c.holds)
			}
			for _, d := range append(acts, holds...) {
				if d.Reason == "" {
					t.Errorf("decision %+v without a reason", d)
				}
			}
		})
	}
}

func TestPlanUpdateAddressKeepsSuffrage(t *testing.T) {
	in := baseInput([]Server{voter("a"), nonvoter("b")}, alive("a"), alive("b"))
	in.Members[1].Meta.RaftAddr = "raft-b-new:1"
	acts, _ := plan(in)
	if len(acts) != 1 || acts[0].Kind != actUpdateAddress || acts[0].Voter || acts[0].Addr != "raft-b-new:1" {
		t.Fatalf("got %+v", acts)
	}
}

func TestJudgeHealth(t *testing.T) {
	lim := healthLimits{LastContactThreshold: 200 * time.Millisecond, MaxTrailingLogs: 10}
	st := func(c time.Duration, term, idx uint64) *ServerStats {
		return &ServerStats{LastContact: c, LastTerm: term, LastIndex: idx}
	}
	cases := []struct {
		st *ServerStats
		ok bool
	}{
		{nil, false},
		{st(-1, 5, 100), false},
		{st(201*time.Millisecond, 5, 100), false},
		{st(200*time.Millisecond, 5, 100), true},
		{st(0, 4, 100), false},
		{st(0, 5, 89), false},
		{st(0, 5, 90), true},
	}
	for _, c := range cases {
		if ok, why := judgeHealth(c.st, 5, 100, lim); ok != c.ok || why == "" {
			t.Errorf("judgeHealth(%+v) = %v %q, want %v", c.st, ok, why, c.ok)
		}
	}
}

func TestTrackHealth(t *testing.T) {
	h := trackHealth(health{}, false, false, "x", t0)
	if h.Healthy || !h.Since.Equal(t0) {
		t.Fatalf("first sighting: %+v", h)
	}
	h = trackHealth(h, true, false, "y", t0.Add(time.Second))
	if !h.Since.Equal(t0) || h.Reason != "y" {
		t.Fatalf("unchanged health moved Since: %+v", h)
	}
	h = trackHealth(h, true, true, "ok", t0.Add(2*time.Second))
	if !h.Healthy || !h.Since.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("flip did not move Since: %+v", h)
	}
}

// world is the property test's model of a cluster: a raft configuration
// plus a gossip view, changed only by applying the planner's actions.
type world struct {
	in planInput
}

func randomWorld(r *rand.Rand) world {
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	nServers := 1 + r.IntN(7)
	in := baseInput(nil)
	in.MinQuorum = []int{0, 0, 3, 5}[r.IntN(4)]
	for i, id := range ids {
		inConfig := i < nServers
		if inConfig {
			s := voter(id)
			if i > 0 && r.IntN(4) == 0 {
				s.Voter = false
			}
			in.Servers = append(in.Servers, s)
		}
		switch k := r.IntN(10); {
		case i == 0 || k < 5: // the leader ("a") is always alive
			in.Members = append(in.Members, alive(id))
		case k < 8:
			st := []Status{StatusDead, StatusLeft}[r.IntN(2)]
			in.Members = append(in.Members, down(id, st, time.Duration(r.IntN(60))*time.Second))
		default:
			if inConfig {
				in.AbsentSince[id] = in.Now.Add(-time.Duration(r.IntN(60)) * time.Second)
			}
		}
		if n := len(in.Members); n > 0 && in.Members[n-1].ID == id {
			if r.IntN(8) == 0 {
				in.Members[n-1].Meta.RaftAddr = "raft-" + ids[r.IntN(len(ids))] + "-x:1"
			} else if r.IntN(10) == 0 {
				in.Members[n-1].Meta.RaftAddr = "raft-" + ids[r.IntN(len(ids))] + ":1" // may collide
			}
		}
		if r.IntN(2) == 0 {
			in.Health[id] = health{Healthy: r.IntN(3) > 0, Since: in.Now.Add(-time.Duration(r.IntN(20)) * time.Second)}
		}
	}
	return world{in: in}
}

func (w world) member(id string) (Member, bool) {
	for _, m := range w.in.Members {
		if m.ID == string(id) {
			return m, true
		}
	}
	return Member{}, false
}

// isDownLong: dead/left/absent for at least the timeout, per the rules.
func (w world) downFor(id string) (time.Duration, bool) {
	m, ok := w.member(id)
	if !ok {
		since, known := w.in.AbsentSince[id]
		if !known {
			return 0, true
		}
		return w.in.Now.Sub(since), true
	}
	if m.Status == StatusAlive {
		return 0, false
	}
	return w.in.Now.Sub(m.Since), true
}

func (w world) voterCounts() (voters, downVoters int) {
	for _, s := range w.in.Servers {
		if s.Voter {
			voters++
			if _, d := w.downFor(s.ID); d {
				downVoters++
			}
		}
	}
	return
}

// check states the rules independently of plan's code and panics-free
// reports the first violation by d against the world before applying it.
func (w world) check(d decision) error {
	idx := -1
	for i, s := range w.in.Servers {
		if s.ID == d.ID {
			idx = i
		}
	}
	m, known := w.member(d.ID)
	switch d.Kind {
	case actRemove:
		if idx < 0 || d.ID == w.in.Leader {
			return fmt.Errorf("removes %s: not in config or the leader", d.ID)
		}
		dur, isDown := w.downFor(d.ID)
		if !isDown || dur < w.in.DeadServerTimeout {
			return fmt.Errorf("removes %s down=%v for %v < timeout", d.ID, isDown, dur)
		}
		if w.in.Servers[idx].Voter {
			v, dv := w.voterCounts()
			if v-dv < v/2+1 {
				return fmt.Errorf("removes voter %s with %d of %d voters down: alive voters are no quorum", d.ID, dv, v)
			}
			if v-1 < w.in.MinQuorum {
				return fmt.Errorf("removes voter %s leaving %d < MinQuorum %d", d.ID, v-1, w.in.MinQuorum)
			}
		}
	case actAdd:
		if idx >= 0 || !known || m.Status != StatusAlive || d.Addr != m.Meta.RaftAddr {
			return fmt.Errorf("adds %s: in config=%v known=%v", d.ID, idx >= 0, known)
		}
	case actPromote:
		h, ok := w.in.Health[d.ID]
		if idx < 0 || w.in.Servers[idx].Voter || !known || m.Status != StatusAlive ||
			!ok || !h.Healthy || w.in.Now.Sub(h.Since) < w.in.ServerStabilizationTime {
			return fmt.Errorf("promotes %s without being a stable alive non-voter", d.ID)
		}
	case actUpdateAddress:
		if idx < 0 || !known || m.Status != StatusAlive || d.Addr != m.Meta.RaftAddr ||
			d.Voter != (w.in.Servers[idx].Voter) {
			return fmt.Errorf("updates %s wrongly", d.ID)
		}
	default:
		return fmt.Errorf("action of kind %v", d.Kind)
	}
	for _, s := range w.in.Servers {
		if s.Address == d.Addr && s.ID != d.ID && d.Kind != actRemove {
			return fmt.Errorf("%v of %s to address %s held by %s", d.Kind, d.ID, d.Addr, s.ID)
		}
	}
	return nil
}

// apply changes the configuration as raft would.
func (w *world) apply(d decision) {
	servers := w.in.Servers[:0:0]
	found := false
	for _, s := range w.in.Servers {
		if s.ID != d.ID {
			servers = append(servers, s)
			continue
		}
		found = true
		switch d.Kind {
		case actRemove:
			continue
		case actPromote:
			s.Voter = true
		case actUpdateAddress:
			s.Address = d.Addr
		}
		servers = append(servers, s)
	}
	if !found && d.Kind == actAdd {
		servers = append(servers, Server{ID: d.ID, Address: d.Addr})
	}
	w.in.Servers = servers
}

// TestPlanProperties plans and applies on random worlds until nothing is
// left to do, checking every action against the rules restated above,
// and that the fixpoint leaves nothing undone that the rules allow.
func TestPlanProperties(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for iter := 0; iter < 3000; iter++ {
		w := randomWorld(r)
		start := fmt.Sprintf("%+v", w.in)
		steps := 0
		for {
			acts, _ := plan(w.in)
			if len(acts) == 0 {
				break
			}
			if err := w.check(acts[0]); err != nil {
				t.Fatalf("iteration %d step %d: %v\nworld %s", iter, steps, err, start)
			}
			w.apply(acts[0])
			if steps++; steps > 50 {
				t.Fatalf("iteration %d: no fixpoint after 50 steps\nworld %s", iter, start)
			}
		}
		if err := w.checkFixpoint(); err != nil {
			t.Fatalf("iteration %d: %v\nworld %s\nend %+v", iter, err, start, w.in.Servers)
		}
	}
}

// checkFixpoint: nothing the rules allow is left undone.
func (w world) checkFixpoint() error {
	owner := map[string]string{}
	inConfig := map[string]Server{}
	for _, s := range w.in.Servers {
		owner[s.Address] = s.ID
		inConfig[s.ID] = s
	}
	for _, m := range w.in.Members {
		addr := m.Meta.RaftAddr
		if _, ok := inConfig[m.ID]; !ok && m.Status == StatusAlive {
			if _, taken := owner[addr]; !taken {
				return fmt.Errorf("alive %s never added", m.ID)
			}
		}
	}
	v, dv := w.voterCounts()
	for _, s := range w.in.Servers {
		dur, isDown := w.downFor(s.ID)
		if !isDown || dur < w.in.DeadServerTimeout || s.ID == w.in.Leader {
			continue
		}
		if !s.Voter {
			return fmt.Errorf("dead non-voter %s never removed", s.ID)
		}
		if v-dv >= v/2+1 && v-1 >= w.in.MinQuorum {
			return fmt.Errorf("dead voter %s removable but kept (%d voters, %d down)", s.ID, v, dv)
		}
	}
	return nil
}
