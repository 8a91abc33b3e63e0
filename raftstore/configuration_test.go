package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestConfigurationChangesOnFollowerSayNotLeader: a configuration change
// reaching a follower is refused with ErrNotLeader and the leader's hint,
// definite, never an unclassified raft error.
func TestConfigurationChangesOnFollowerSayNotLeader(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	f := c.store((c.index(l) + 1) % 3)
	waitFor(t, "the follower to hear from the leader", func() bool { return f.Status().LeaderID == l.ID() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, change := range map[string]func() (uint64, error){
		"remove":        func() (uint64, error) { return f.RemoveServer(ctx, l.ID()) },
		"add voter":     func() (uint64, error) { return f.AddVoter(ctx, "n9", "n9") },
		"add non-voter": func() (uint64, error) { return f.AddNonvoter(ctx, "n9", "n9") },
	} {
		_, err := change()
		var nle *NotLeaderError
		if !errors.As(err, &nle) || nle.LeaderID != l.ID() || nle.LeaderAddr != l.Addr() || Indeterminate(err) {
			t.Errorf("%s on a follower: %v, want a definite NotLeaderError naming %s", name, err, l.ID())
		}
	}
}

// TestConfigurationChangesOnLeader: the leader removes, re-adds and
// promotes a server; the removal of an unknown server is refused, definite.
func TestConfigurationChangesOnLeader(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	other := c.nodes[(c.index(l)+1)%3].id
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.RemoveServer(ctx, "nobody"); !errors.Is(err, ErrUnknownServer) || Indeterminate(err) {
		t.Errorf("remove unknown: %v, want definite ErrUnknownServer", err)
	}
	before := l.CommitIndex()
	removed, err := l.RemoveServer(ctx, other)
	if err != nil || removed <= before {
		t.Fatalf("remove %s: index %d, %v (commit index was %d)", other, removed, err, before)
	}
	wantSuffrage := func(want Suffrage) {
		t.Helper()
		servers, err := l.Configuration()
		if err != nil {
			t.Fatal(err)
		}
		var got Suffrage
		for _, sv := range servers {
			if sv.ID == other {
				got = sv.Suffrage
			}
		}
		if got != want {
			t.Fatalf("%s is %q in %v, want %q", other, got, servers, want)
		}
	}
	wantSuffrage("")
	if _, err := l.AddNonvoter(ctx, other, other); err != nil {
		t.Fatalf("re-add as non-voter: %v", err)
	}
	wantSuffrage(Nonvoter)
	if _, err := l.AddVoter(ctx, other, other); err != nil {
		t.Fatalf("promote: %v", err)
	}
	wantSuffrage(Voter)
}

// TestRemovingTheLastVoterIsRefused: raft cannot run without a voter; the
// store says so with its own sentinel instead of raft's unclassified error.
func TestRemovingTheLastVoterIsRefused(t *testing.T) {
	c := newCluster(t, 1, nil)
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := l.RemoveServer(ctx, l.ID())
	if !errors.Is(err, ErrLastVoter) || Indeterminate(err) || Retryable(err) {
		t.Fatalf("remove the last voter: %v, want definite, non-retryable ErrLastVoter", err)
	}
	if servers, _ := l.Configuration(); len(servers) != 1 {
		t.Errorf("configuration after a refused removal: %v", servers)
	}
}

// TestTransferToTheLeaderItselfIsRefused names the mistake instead of
// passing raft's "cannot transfer leadership to itself" on unclassified.
func TestTransferToTheLeaderItselfIsRefused(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.TransferLeadership(ctx, l.ID()); !errors.Is(err, ErrAlreadyLeader) || Retryable(err) {
		t.Fatalf("transfer to the leader itself: %v, want ErrAlreadyLeader", err)
	}
	if !l.IsLeader() {
		t.Error("the leader lost leadership over a refused transfer")
	}
}

// TestProgress: the leader reports no contact delay, a follower a
// non-negative one, both the term of their last entry.
func TestProgress(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	c.propose(createStream("a"))
	lp, err := l.Progress()
	if err != nil || lp.LastContact != 0 || lp.LastTerm != l.Term() || lp.LastIndex < l.CommitIndex() {
		t.Errorf("leader progress %+v, %v (term %d, commit %d)", lp, err, l.Term(), l.CommitIndex())
	}
	f := c.store((c.index(l) + 1) % 3)
	waitFor(t, "follower heard from the leader", func() bool {
		fp, err := f.Progress()
		return err == nil && fp.LastContact >= 0 && fp.LastTerm == l.Term()
	})
}

func TestProgressFromStats(t *testing.T) {
	type stats map[string]string
	cases := []struct {
		in      stats
		contact time.Duration
		term    uint64
		bad     bool
	}{
		{in: stats{"last_contact": "0", "last_log_term": "3"}, contact: 0, term: 3},
		{in: stats{"last_contact": "never", "last_log_term": "0"}, contact: -1},
		{in: stats{"last_contact": "12.5ms", "last_log_term": "2"}, contact: 12500 * time.Microsecond, term: 2},
		{in: stats{"last_contact": "soon", "last_log_term": "2"}, bad: true},
		{in: stats{"last_contact": "0", "last_log_term": ""}, bad: true},
		{in: stats{"last_contact": "0", "last_log_term": "-1"}, bad: true},
	}
	for _, c := range cases {
		got, err := progressFromStats(c.in, 40)
		if c.bad {
			if !errors.Is(err, ErrBadStats) {
				t.Errorf("%v: err %v, want ErrBadStats", c.in, err)
			}
			continue
		}
		if err != nil || got.LastContact != c.contact || got.LastTerm != c.term || got.LastIndex != 40 {
			t.Errorf("%v: got %+v, %v", c.in, got, err)
		}
	}
}
