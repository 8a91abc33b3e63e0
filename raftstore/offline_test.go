package raftstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// freeAddr returns a loopback address whose port is free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// openAlone opens dir as node id on a real TCP transport at addr and waits
// until it leads (its configuration must make it the only voter).
func openAlone(t *testing.T, id, dir, addr string) *Store {
	t.Helper()
	cfg := testConfig(id, dir)
	cfg.BindAddr = addr
	if has, err := DirLogStore(dir); err == nil && has != "" {
		cfg.LogStore = has // the log store the dir holds
	}
	s, err := Open(cfg, nil, testLogger(t))
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, _, err := s.AwaitLeadership(ctx); err != nil {
		t.Fatalf("%s did not lead: %v", id, err)
	}
	return s
}

func streamNames(t *testing.T, s *Store) []string {
	t.Helper()
	var names []string
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	err := s.Read(ctx, func(m *fsm.Machine) error {
		for _, st := range m.Streams(0, 1<<20) {
			names = append(names, st.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func writeStreams(c *testCluster, prefix string, n int) {
	for i := range n {
		c.propose(createStream(fmt.Sprintf("%s%d", prefix, i)))
	}
}

// saveFile takes a checkpoint on s and returns it as a snapshot file.
func saveFile(t *testing.T, s *Store) ([]byte, *Checkpoint) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cp, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatalf("checkpoint on %s: %v", s.ID(), err)
	}
	var buf bytes.Buffer
	fw, err := NewFileWriter(&buf, FileMeta{NodeID: cp.NodeID, Index: cp.Index, Term: cp.Term, TakenAt: cp.TakenAt, Servers: cp.Servers})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WriteTo(fw); err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if fw.Size() != int64(buf.Len()) {
		t.Errorf("Size %d, wrote %d", fw.Size(), buf.Len())
	}
	return buf.Bytes(), cp
}

// TestCheckpointSaveRestore: a checkpoint taken on a follower holds every
// acknowledged write; the file verifies, counts its records, and restores
// into a new single-node store that serves the same state.
func TestCheckpointSaveRestore(t *testing.T) {
	c := newCluster(t, 3, nil)
	writeStreams(c, "s", 12)
	var follower *Store
	for i := range c.nodes {
		if s := c.store(i); !s.IsLeader() {
			follower = s
		}
	}
	file, cp := saveFile(t, follower)
	if cp.NodeID != follower.ID() || cp.Index == 0 || cp.Term == 0 || len(cp.Servers) != 3 {
		t.Fatalf("checkpoint %+v", cp)
	}
	want, applied, _ := follower.StateHash()

	f, err := OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Verify(nil); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if f.Meta.Index != cp.Index || f.Meta.NodeID != cp.NodeID || len(f.Meta.Servers) != 3 {
		t.Errorf("meta %+v, checkpoint %+v", f.Meta, cp)
	}
	sum, err := SummarizeStream(f.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Index != cp.Index || sum.Counts["stream"] != 12 || sum.Counts["meta"] != 1 || sum.FSM.Records == 0 {
		t.Errorf("summary %+v", sum)
	}
	if idx, err := VerifyStream(f.Stream()); err != nil || idx != cp.Index {
		t.Errorf("VerifyStream = %d, %v", idx, err)
	}

	addr := freeAddr(t)
	dir := filepath.Join(t.TempDir(), "restored")
	index, err := RestoreDir(dir, []Server{{ID: "r1", Address: addr}}, f.Stream(), RestoreOptions{KeepIdentity: true}, nil)
	if err != nil || index != cp.Index {
		t.Fatalf("RestoreDir = %d, %v (checkpoint at %d)", index, err, cp.Index)
	}
	if _, err := RestoreDir(dir, []Server{{ID: "r1", Address: addr}}, f.Stream(), RestoreOptions{}, nil); !errors.Is(err, ErrHasState) {
		t.Errorf("second restore into the same dir: %v, want ErrHasState", err)
	}
	r := openAlone(t, "r1", dir, addr)
	if got := streamNames(t, r); len(got) != 12 {
		t.Fatalf("restored streams %v", got)
	}
	var restored *fsm.Machine
	_ = r.ReadLocal(func(m *fsm.Machine) error { restored = m.Clone(); return nil })
	got, _, _ := restored.StateHash()
	if got != want || restored.AppliedIndex() != applied {
		t.Errorf("restored state %x at %d, source %x at %d", got, restored.AppliedIndex(), want, applied)
	}
	// The restored cluster takes writes after the snapshot's index.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := r.Propose(ctx, createStream("after-restore"))
	if err != nil || res.Version <= cp.Index {
		t.Fatalf("write after restore: %v %v (snapshot at %d)", res, err, cp.Index)
	}
}

// TestSnapshotFileDetectsCorruption: a flipped byte anywhere, or a
// truncated file, is reported; a corrupt stream behind a valid file
// checksum is caught by the stream's own checks.
func TestSnapshotFileDetectsCorruption(t *testing.T) {
	c := newCluster(t, 1, nil)
	writeStreams(c, "s", 5)
	file, _ := saveFile(t, c.store(0))

	for _, at := range []int{20, len(file) / 2, len(file) - 40} {
		bad := bytes.Clone(file)
		bad[at] ^= 0x40
		f, err := OpenFile(bytes.NewReader(bad), int64(len(bad)))
		if err == nil {
			err = f.Verify(nil)
		}
		if !errors.Is(err, ErrCorruptFile) {
			t.Errorf("byte %d flipped: %v, want ErrCorruptFile", at, err)
		}
	}
	if _, err := OpenFile(bytes.NewReader(file[:30]), 30); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("truncated: %v", err)
	}

	// Corrupt the last record and re-seal the file checksum: the file
	// verifies, the stream does not.
	bad := bytes.Clone(file)
	bad[len(bad)-sha256.Size-3] ^= 0x01
	sum := sha256.Sum256(bad[:len(bad)-sha256.Size])
	copy(bad[len(bad)-sha256.Size:], sum[:])
	f, err := OpenFile(bytes.NewReader(bad), int64(len(bad)))
	if err != nil || f.Verify(nil) != nil {
		t.Fatalf("re-sealed file: %v", err)
	}
	if _, err := SummarizeStream(f.Stream()); !errors.Is(err, fsm.ErrCorruptSnapshot) {
		t.Errorf("SummarizeStream: %v, want ErrCorruptSnapshot", err)
	}
	if _, err := VerifyStream(f.Stream()); !errors.Is(err, fsm.ErrCorruptSnapshot) {
		t.Errorf("VerifyStream: %v, want ErrCorruptSnapshot", err)
	}
	if _, err := RestoreDir(t.TempDir(), []Server{{ID: "r1", Address: "127.0.0.1:1"}}, f.Stream(), RestoreOptions{}, nil); !errors.Is(err, fsm.ErrCorruptSnapshot) {
		t.Errorf("RestoreDir: %v, want ErrCorruptSnapshot", err)
	}
}

// TestInspectAndRecoverDir: a 3-node cluster loses two nodes for good; the
// survivor's dir is inspected, recovered to a configuration of itself
// alone, and serves every write it had.
// TestInspectAndRecoverDir runs the offline operations on each log store.
func TestInspectAndRecoverDir(t *testing.T) {
	for _, kind := range LogStores {
		t.Run(string(kind), func(t *testing.T) { inspectAndRecoverDir(t, kind) })
	}
}

func inspectAndRecoverDir(t *testing.T, kind LogStore) {
	c := newCluster(t, 3, func(_ int, cfg *Config, _ *openOptions) { cfg.LogStore = kind })
	writeStreams(c, "s", 10)
	survivor := c.store(0)
	c.hasStream(survivor, "s9") // applied here
	wantHash, wantApplied, _ := survivor.StateHash()
	dir := c.nodes[0].cfg.DataDir

	if _, err := InspectDir(dir, false); !errors.Is(err, ErrDirInUse) {
		t.Errorf("inspect a running node's dir: %v, want ErrDirInUse", err)
	}
	c.closeAll()

	info, err := InspectDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if info.CurrentTerm == 0 || info.LastIndex < 10 || len(info.Servers) != 3 || info.State == nil {
		t.Fatalf("inspect: %+v", info)
	}
	if info.State.Counts["stream"] != 10 || info.State.Hash != wantHash || info.State.LastCommand != wantApplied {
		t.Errorf("replayed state %+v, want hash %x at %d", info.State, wantHash, wantApplied)
	}

	// Every node's log holds the same entries (ReadLog, as the Jepsen
	// harness compares them).
	var logs [2][]LogEntry
	for i := range logs {
		err := ReadLog(c.nodes[i].cfg.DataDir, 0, 0, func(e LogEntry) error {
			logs[i] = append(logs[i], e)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	kinds := map[string]int{}
	for i, e := range logs[0] {
		kinds[e.Kind]++
		if e.Index != logs[0][0].Index+uint64(i) || e.Term == 0 {
			t.Fatalf("entry %d: %v", i, e)
		}
	}
	if kinds["CreateStream"] != 10 || kinds["LogConfiguration"] == 0 || uint64(len(logs[0])) != info.LastIndex-info.FirstIndex+1 {
		t.Errorf("log of %d entries %v; want 10 CreateStream and a configuration, %d..%d", len(logs[0]), kinds, info.FirstIndex, info.LastIndex)
	}
	if !slices.Equal(logs[0], logs[1]) {
		t.Errorf("the logs of two nodes differ:\n%v\n%v", logs[0], logs[1])
	}
	if logs[0][len(logs[0])-1].Digest == logs[0][len(logs[0])-2].Digest {
		t.Errorf("two different entries have the same digest: %v", logs[0][len(logs[0])-2:])
	}
	var window []uint64
	if err := ReadLog(dir, 5, 7, func(e LogEntry) error { window = append(window, e.Index); return nil }); err != nil || !slices.Equal(window, []uint64{5, 6, 7}) {
		t.Errorf("ReadLog 5..7 = %v, %v", window, err)
	}
	// Replayed to its last index, the log gives the state the node served;
	// replayed to before the last stream was created, one stream less.
	var replay bytes.Buffer
	index, term, err := ReplayDirTo(dir, info.LastIndex, &replay)
	if err != nil || index != info.LastIndex || term != info.LastTerm {
		t.Fatalf("ReplayDirTo(last) = %d, %d, %v; want %d, %d", index, term, err, info.LastIndex, info.LastTerm)
	}
	if sum, err := SummarizeStream(&replay); err != nil || sum.FSM.Checksum != wantHash || sum.Index != index {
		t.Errorf("replayed to the end: %+v, %v; want hash %x", sum, err, wantHash)
	}
	replay.Reset()
	if _, _, err := ReplayDirTo(dir, wantApplied-1, &replay); err != nil {
		t.Fatal(err)
	}
	if sum, err := SummarizeStream(&replay); err != nil || sum.Counts["stream"] != 9 {
		t.Errorf("replayed to before the last write: %+v, %v; want 9 streams", sum, err)
	}
	if _, _, err := ReplayDirTo(dir, info.LastIndex+1, &replay); !errors.Is(err, ErrIndexUnavailable) {
		t.Errorf("ReplayDirTo(last+1): %v, want ErrIndexUnavailable (not the state at the last index)", err)
	}

	addr := freeAddr(t)
	if _, err := RecoverDir(dir, []Server{{ID: "n1", Address: "nowhere"}}, nil); !errors.Is(err, ErrBadServers) {
		t.Errorf("recover with a bad address: %v", err)
	}
	after, err := RecoverDir(dir, []Server{{ID: "n1", Address: addr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Servers) != 1 || after.Servers[0].Address != addr || after.State.Hash != wantHash {
		t.Fatalf("after recovery: %+v", after)
	}
	s := openAlone(t, "n1", dir, addr)
	if got := streamNames(t, s); len(got) != 10 {
		t.Fatalf("recovered streams %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := s.Propose(ctx, createStream("after-recovery")); err != nil {
		t.Fatal(err)
	}

	if _, err := InspectDir(filepath.Join(t.TempDir(), "none"), false); !errors.Is(err, ErrNoState) {
		t.Errorf("inspect a missing dir: %v, want ErrNoState", err)
	}
	if _, err := RecoverDir(filepath.Join(t.TempDir(), "none"), []Server{{ID: "n1", Address: addr}}, nil); !errors.Is(err, ErrNoState) {
		t.Errorf("recover a missing dir: %v, want ErrNoState", err)
	}
}

func TestRaftConfigurationReportsEveryProblem(t *testing.T) {
	_, err := raftConfiguration([]Server{
		{ID: "a", Address: "127.0.0.1:1", Suffrage: Nonvoter},
		{ID: "a", Address: "127.0.0.1:2", Suffrage: Nonvoter},
		{ID: "b c", Address: "127.0.0.1:3", Suffrage: Nonvoter},
		{ID: "d", Address: "0.0.0.0:4", Suffrage: "boss"},
	})
	if !errors.Is(err, ErrBadServers) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"duplicate", "space", "suffrage", "no voter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
}

// TestStoreMetrics: proposals, reads, confirmation rounds and leader
// changes show in the registered metrics.
func TestStoreMetrics(t *testing.T) {
	c := newCluster(t, 3, nil)
	reg := prometheus.NewPedanticRegistry()
	l := c.leader()
	if err := l.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	writeStreams(c, "m", 3)
	c.hasStream(l, "m2")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, f := range families {
		got[f.GetName()] = f
	}
	count := func(name string) float64 {
		f := got[name]
		if f == nil {
			t.Errorf("%s missing", name)
			return 0
		}
		var n float64
		for _, m := range f.Metric {
			switch {
			case m.Histogram != nil:
				n += float64(m.Histogram.GetSampleCount())
			case m.Counter != nil:
				n += m.Counter.GetValue()
			case m.Gauge != nil:
				n += m.Gauge.GetValue()
			}
		}
		return n
	}
	for name, atLeast := range map[string]float64{
		"metad_raft_apply_duration_seconds": 3, "metad_raft_read_duration_seconds": 1,
		"metad_raft_readindex_batch_reads": 1, "metad_raft_readindex_rounds_total": 1,
		"metad_raft_leader_changes_total": 1, "metad_raft_commit_index": 4, "metad_raft_applied_index": 4,
		"metad_raft_last_log_index": 4, "metad_raft_term": 1, "metad_raft_leader": 1,
		"metad_raft_log_store": 1, "metad_state_disk_bytes": 1,
	} {
		if v := count(name); v < atLeast {
			t.Errorf("%s = %v, want >= %v", name, v, atLeast)
		}
	}
	if ls := got["metad_raft_log_store"]; ls != nil && ls.Metric[0].GetLabel()[0].GetValue() != "wal" {
		t.Errorf("metad_raft_log_store labels %v, want store=wal (auto, on a new dir)", ls.Metric[0].GetLabel())
	}
	if err := l.RegisterMetrics(reg); err == nil {
		t.Error("registering twice must fail")
	}
}

// TestRestoreDirIdentity: a restore drops the source's cluster id and
// tombstones (a new cluster) unless KeepIdentity, which gives the source's
// state byte for byte.
func TestRestoreDirIdentity(t *testing.T) {
	c := newCluster(t, 1, nil)
	s := c.store(0)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for _, cmd := range []*fsmpb.Command{setLevel(2), setClusterID("c0ffee"),
		{RequestId: "tomb", Op: &fsmpb.Command_AddTombstone{AddTombstone: &fsmpb.AddTombstone{NodeId: "gone"}}}} {
		if res, err := s.Propose(ctx, cmd); err != nil || res.Rejection != nil {
			t.Fatalf("%v: %v %v", cmd, res, err)
		}
	}
	writeStreams(c, "s", 3)
	file, _ := saveFile(t, s)
	want, _, _ := s.StateHash()
	for _, keep := range []bool{false, true} {
		f, err := OpenFile(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatal(err)
		}
		addr := freeAddr(t)
		dir := filepath.Join(t.TempDir(), "restored")
		if _, err := RestoreDir(dir, []Server{{ID: "r1", Address: addr}}, f.Stream(), RestoreOptions{KeepIdentity: keep}, nil); err != nil {
			t.Fatal(err)
		}
		r := openAlone(t, "r1", dir, addr)
		var restored *fsm.Machine
		_ = r.ReadLocal(func(m *fsm.Machine) error { restored = m.Clone(); return nil })
		got, _, _ := restored.StateHash()
		id, tombs, streams := restored.ClusterID(), len(restored.Tombstones()), len(streamNames(t, r))
		switch {
		case streams != 3:
			t.Errorf("keep=%v: %d streams restored, want 3", keep, streams)
		case keep && (got != want || id != "c0ffee" || tombs != 1):
			t.Errorf("KeepIdentity: state %x, cluster id %q, %d tombstones; want the source's %x, c0ffee, 1", got, id, tombs, want)
		case !keep && (id != "" || tombs != 0):
			t.Errorf("new identity: cluster id %q, %d tombstones; want none", id, tombs)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// ReplayRange: from the newest snapshot (or the empty state) to the
// highest index the log or the snapshot reaches.
func TestReplayRange(t *testing.T) {
	for _, tc := range []struct {
		info   DirInfo
		lo, hi uint64
	}{
		{DirInfo{}, 0, 0},
		{DirInfo{FirstIndex: 1, LastIndex: 40}, 0, 40},
		{DirInfo{FirstIndex: 20, LastIndex: 40, Snapshots: []SnapshotInfo{{Index: 30}, {Index: 10}}}, 30, 40},
		{DirInfo{Snapshots: []SnapshotInfo{{Index: 30}}}, 30, 30}, // a recovered dir: snapshot, empty log
	} {
		if lo, hi := tc.info.ReplayRange(); lo != tc.lo || hi != tc.hi {
			t.Errorf("%+v: ReplayRange = %d..%d, want %d..%d", tc.info, lo, hi, tc.lo, tc.hi)
		}
	}
}
