package backup

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/raftstore"
)

// leadingStore is a real single-node raft store on disk, leading, at
// feature level 2 with cluster id cid.
func leadingStore(t *testing.T, cid string) *raftstore.Store {
	t.Helper()
	cfg := raftstore.DefaultConfig()
	cfg.NodeID, cfg.DataDir, cfg.BindAddr = "b1", t.TempDir(), "127.0.0.1:0"
	s, err := raftstore.Open(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Bootstrap([]raftstore.Server{{ID: "b1", Address: s.Addr(), Suffrage: raftstore.Voter}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := s.AwaitLeadership(ctx); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []*fsmpb.Command{
		{RequestId: "level", Op: &fsmpb.Command_SetFeatureLevel{SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: 2}}},
		{RequestId: "cid", Op: &fsmpb.Command_SetClusterId{SetClusterId: &fsmpb.SetClusterID{ClusterId: cid}}},
		{RequestId: "s", Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}},
	} {
		if res, err := s.Propose(ctx, cmd); err != nil || res.Rejection != nil {
			t.Fatalf("%v: %v %v", cmd, res, err)
		}
	}
	return s
}

// TestSchedulerContinuesPrunesAndVerifies: a new leader finds the newest
// backup a previous leader left and takes the next one an interval after
// it; each backup verifies as a snapshot file of the state; only the
// retain newest of this cluster's backups stay, and another cluster's
// backup and a file that is no backup are left alone.
func TestSchedulerContinuesPrunesAndVerifies(t *testing.T) {
	const cid = "c0ffee"
	store := leadingStore(t, cid)
	dir := t.TempDir()
	start := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	previous := Name(cid, start.Add(-20*time.Minute), 1) // a former leader's
	foreign := Name("other", start.Add(-time.Hour), 1)
	for _, n := range []string{previous, foreign, "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("not checked"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tg, err := OpenTarget(t.Context(), "backup-to", dir, noS3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Interval: 30 * time.Minute, To: dir, Retain: 2}
	reg := prometheus.NewRegistry()
	fc := fakeclock.New(start)
	s, err := New(cfg, tg, store, slog.New(slog.DiscardHandler), reg, WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	files := func() []string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		slices.Sort(out)
		return out
	}
	fc.BlockUntil(1)
	fc.Advance(9*time.Minute + 59*time.Second)
	fc.BlockUntil(1)
	if got := files(); len(got) != 3 {
		t.Fatalf("a backup before the previous leader's schedule said: %v", got)
	}
	fc.Advance(time.Second) // 30m after the previous backup
	fc.BlockUntil(1)        // armed again: the backup is done
	first := Name(cid, start.Add(10*time.Minute), store.AppliedIndex())
	if got, want := files(), sorted(first, previous, foreign, "notes.txt"); !slices.Equal(got, want) {
		t.Fatalf("after the first backup: %v, want %v", got, want)
	}
	fc.Advance(30 * time.Minute)
	fc.BlockUntil(1)
	second := Name(cid, start.Add(40*time.Minute), store.AppliedIndex())
	if got, want := files(), sorted(first, second, foreign, "notes.txt"); !slices.Equal(got, want) {
		t.Fatalf("after the second backup: %v, want %v (the previous leader's pruned)", got, want)
	}
	v, err := VerifyFile(filepath.Join(dir, second))
	if err != nil || v.Meta.ClusterID != cid || v.Meta.Index != store.AppliedIndex() || v.Records == 0 {
		t.Fatalf("VerifyFile = %+v, %v", v, err)
	}
	if got := gathered(t, reg); got["metad_backup_total"] != 2 || got["metad_backup_pruned_total"] != 1 ||
		got["metad_backup_last_index"] != float64(store.AppliedIndex()) ||
		got["metad_backup_last_success_timestamp_seconds"] != float64(start.Add(40*time.Minute).Unix()) || got["metad_backup_last_size_bytes"] == 0 {
		t.Errorf("metrics %v", got)
	}
}

func sorted(names ...string) []string {
	slices.Sort(names)
	return names
}

// gathered sums each gathered counter and gauge by name (failed backups
// count in metad_backup_total too, so a sum of 2 with 2 ok is 0 failed).
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			out[mf.GetName()] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}
