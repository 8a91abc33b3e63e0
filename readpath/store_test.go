package readpath

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/gc"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/resolver"
)

// openAlone opens a one-voter Raft store on a real TCP transport and waits
// until it leads.
func openAlone(t *testing.T) *raftstore.Store {
	t.Helper()
	cfg := raftstore.DefaultConfig()
	cfg.NodeID, cfg.DataDir, cfg.BindAddr = "n1", t.TempDir(), "127.0.0.1:0"
	cfg.HeartbeatTimeout, cfg.ElectionTimeout = 200*time.Millisecond, 200*time.Millisecond
	cfg.LeaderLeaseTimeout = 100 * time.Millisecond
	s, err := raftstore.Open(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Bootstrap([]raftstore.Server{{ID: "n1", Address: s.Addr()}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := s.AwaitLeadership(ctx); err != nil {
		t.Fatalf("did not lead: %v", err)
	}
	return s
}

// TestStoreServesEveryReader: the one adapter gives repair, gc and the
// resolver the same replicated state, each through its own State, and
// Propose commits through Raft.
func TestStoreServesEveryReader(t *testing.T) {
	raft := openAlone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep := NewStore[repair.State](raft)
	res, err := rep.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}})
	if err != nil || res.Rejection != nil || res.StreamId == 0 {
		t.Fatalf("create stream: %v %v", res, err)
	}
	var streams []fsm.StreamInfo
	if err := rep.Read(ctx, func(st repair.State) { streams = st.Streams(0, 10) }); err != nil {
		t.Fatal(err)
	}
	if len(streams) != 1 || streams[0].Name != "s" {
		t.Fatalf("repair reads streams %+v, want the one named s", streams)
	}
	var found bool
	var applied uint64
	if err := NewStore[resolver.State](raft).Read(ctx, func(st resolver.State) {
		_, found = st.Stream(res.StreamId)
		applied = st.AppliedIndex()
	}); err != nil {
		t.Fatal(err)
	}
	if !found || applied == 0 {
		t.Fatalf("the resolver reads stream %d found=%v at index %d, want it found at an applied index", res.StreamId, found, applied)
	}
	var clock int64
	if err := NewStore[gc.State](raft).Read(ctx, func(st gc.State) { clock = st.Clock() }); err != nil {
		t.Fatal(err)
	}
	if clock == 0 {
		t.Fatal("gc reads machine time 0 after a stamped command")
	}
}

// notMachine is a State *fsm.Machine does not satisfy.
type notMachine interface{ NoSuchMethod() }

func TestNewStoreRefusesAStateTheMachineLacks(t *testing.T) {
	defer func() {
		p := recover()
		if msg, _ := p.(string); !strings.Contains(msg, "notMachine") {
			t.Fatalf("panic %v, want one naming the State", p)
		}
	}()
	NewStore[notMachine](nil)
}
