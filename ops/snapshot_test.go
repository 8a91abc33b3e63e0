package ops

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/raftstore"
)

// TestSnapshotSaveUnderWritesRestoreSingleNode: `metad snapshot save` from
// a follower of a 3-node cluster taking writes holds every write
// acknowledged before it started; `inspect` verifies it and counts its
// records, and catches a corrupted or truncated copy; `restore` into the
// data dir of a new single server gives a node that serves exactly the
// snapshot's streams and index records, and takes writes after it.
func TestSnapshotSaveUnderWritesRestoreSingleNode(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	w := proc.NewWriter(t, c.Client(), "backed-up")
	l := startLoad(t, w)
	l.waitAcks(c, 30)

	follower := (c.Leader(0) + 1) % 3
	_, ackedBefore := l.acked()
	file := filepath.Join(t.TempDir(), "backup.snap")
	out := mustCLI(t, "snapshot", "save", file, "--addr", c.Nodes[follower].GRPC, "-o", "json")
	var saved struct {
		Index   uint64 `json:"index"`
		NodeID  string `json:"node_id"`
		Records uint64 `json:"records"`
		SHA256  string `json:"sha256"`
	}
	if err := json.Unmarshal([]byte(out), &saved); err != nil {
		t.Fatalf("save output %q: %v", out, err)
	}
	if saved.NodeID != c.Nodes[follower].ID || saved.Index == 0 || saved.Records == 0 {
		t.Fatalf("saved %+v", saved)
	}
	l.waitAcks(c, 10) // writes went on during and after the save
	acks := l.finish()
	if bad := l.failures(); len(bad) > 0 {
		t.Fatalf("the writer saw non-retryable failures: %v", bad)
	}

	snap := loadSnapshot(t, file)
	st, ok := snap.Stream(w.Stream)
	if !ok || st.CommittedEnd < ackedBefore || st.CommittedEnd > acks[len(acks)-1].end {
		t.Fatalf("snapshot committed end %d (ok %v): acknowledged before the save %d, at the end %d",
			st.CommittedEnd, ok, ackedBefore, acks[len(acks)-1].end)
	}
	t.Logf("snapshot at index %d holds committed end %d; %d acknowledged before, %d at the end",
		saved.Index, st.CommittedEnd, ackedBefore, acks[len(acks)-1].end)

	inspectOK(t, file, saved.SHA256)
	inspectCatchesCorruption(t, file)
	diffAfterWrites(t, c, file, w.Stream)

	r := proc.New(t, 1)
	rn := r.Nodes[0]
	mustCLI(t, "snapshot", "restore", file, "--data-dir", rn.DataDir, "--node-id", rn.ID, "--raft-addr", rn.Raft)
	if _, code := cli(t, "", "snapshot", "restore", file, "--data-dir", rn.DataDir, "--node-id", rn.ID, "--raft-addr", rn.Raft); code == 0 {
		t.Error("a second restore into the same data dir succeeded")
	}
	r.StartAll()
	formed(t, r, 1)
	compareWithSnapshot(t, r, snap, w.Stream)

	// The restored node is a cluster of its own and takes writes.
	w2 := &proc.Writer{Client: r.Client(), Stream: w.Stream, Epoch: st.WriterEpoch, End: st.CommittedEnd}
	w2.MustAppend(t, 1)
	if w2.End != st.CommittedEnd+1 {
		t.Fatalf("append after restore: end %d", w2.End)
	}
}

// diffAfterWrites: with the writes over, snapshots of the leader and of a
// follower are the same state, and `snapshot diff` says so (exit 0); the
// snapshot taken during the writes differs from them in the written
// stream, and `snapshot diff` lists it (exit 1). Then the follower is
// stopped and its log rebuilt and listed offline.
func diffAfterWrites(t *testing.T, c *proc.Cluster, during string, stream uint64) {
	t.Helper()
	leader := c.WaitLeader(0)
	follower := (leader + 1) % 3
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "leader.snap"), filepath.Join(dir, "follower.snap")}
	mustCLI(t, "snapshot", "save", files[0], "--addr", c.Nodes[leader].GRPC)
	var saved struct{ Index uint64 }
	if err := json.Unmarshal([]byte(mustCLI(t, "snapshot", "save", files[1], "--addr", c.Nodes[follower].GRPC, "-o", "json")), &saved); err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, "snapshot", "diff", files[0], files[1])
	if !strings.Contains(out, "the states are the same") || strings.Contains(out, "\n~ ") {
		t.Errorf("diff of two members after the writes:\n%s", out)
	}
	out, code := cli(t, "", "snapshot", "diff", during, files[0])
	if code != 1 || !strings.Contains(out, fmt.Sprintf("~ stream %d\n", stream)) || !strings.Contains(out, "the states differ in") {
		t.Errorf("diff of the snapshot taken during the writes and one after them: exit %d\n%s", code, out)
	}

	// Stopped, the follower's log rebuilds the state it served at the
	// snapshot's index (`data snapshot`), and `data log` lists that log.
	c.Stop(follower)
	dataDir := c.Nodes[follower].DataDir
	rebuilt := filepath.Join(dir, "rebuilt.snap")
	mustCLI(t, "data", "snapshot", rebuilt, "--data-dir", dataDir, "--index", fmt.Sprint(saved.Index))
	if out := mustCLI(t, "snapshot", "diff", files[1], rebuilt); !strings.Contains(out, "the states are the same") {
		t.Errorf("the follower's live state against its log rebuilt to index %d:\n%s", saved.Index, out)
	}
	mustCLI(t, "data", "snapshot", filepath.Join(dir, "older.snap"), "--data-dir", dataDir, "--index", fmt.Sprint(saved.Index/2))
	if _, code := cli(t, "", "snapshot", "diff", files[1], filepath.Join(dir, "older.snap")); code != 1 {
		t.Errorf("the log rebuilt to index %d diffs as the state at %d: exit %d", saved.Index/2, saved.Index, code)
	}
	appends, prev := 0, uint64(0)
	for _, line := range strings.Split(strings.TrimSpace(mustCLI(t, "data", "log", "--data-dir", dataDir, "-o", "json")), "\n") {
		var e struct {
			Index, Term  uint64
			Kind, Digest string
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || (prev != 0 && e.Index != prev+1) || e.Term == 0 || len(e.Digest) != 16 {
			t.Fatalf("data log line %q after index %d: %v", line, prev, err)
		}
		prev = e.Index
		if e.Kind == "CommitAppend" {
			appends++
		}
	}
	if appends == 0 || prev < saved.Index {
		t.Errorf("data log: %d appends, last index %d (snapshot at %d)", appends, prev, saved.Index)
	}
	if out := mustCLI(t, "data", "log", "--data-dir", dataDir, "--from", "3", "--to", "4"); strings.Count(out, "\n") != 2 || !strings.HasPrefix(out, "index 3 term ") {
		t.Errorf("data log --from 3 --to 4:\n%s", out)
	}
}

// loadSnapshot restores a snapshot file in memory, independently of the
// server, as the reference to compare the restored node with.
func loadSnapshot(t *testing.T, path string) *fsm.Machine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	sf, err := raftstore.OpenFile(f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	rd := sf.Stream()
	var hdr [16]byte
	if _, err := rd.Read(hdr[:]); err != nil {
		t.Fatal(err)
	}
	m, err := fsm.Restore(rd)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func inspectOK(t *testing.T, file, sum string) {
	t.Helper()
	out := mustCLI(t, "snapshot", "inspect", file, "-o", "json")
	var rep struct {
		Valid  bool              `json:"valid"`
		SHA256 string            `json:"sha256"`
		Counts map[string]uint64 `json:"record_counts"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("inspect output %q: %v", out, err)
	}
	if !rep.Valid || rep.SHA256 != sum || rep.Counts["stream"] != 1 || rep.Counts["index_record"] < 30 || rep.Counts["meta"] != 1 {
		t.Fatalf("inspect: %s", out)
	}
	table := mustCLI(t, "snapshot", "inspect", file)
	for _, want := range []string{"Index", "Term", "index_record", "file SHA-256", "state invariants"} {
		if !strings.Contains(table, want) {
			t.Errorf("inspect table lacks %q:\n%s", want, table)
		}
	}
}

// inspectCatchesCorruption: a flipped byte (in the meta, the stream header
// or a record) and a truncated file make inspect exit 1 naming the failed
// check.
func inspectCatchesCorruption(t *testing.T, file string) {
	t.Helper()
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, bad := range map[string][]byte{
		"meta":      flip(good, 20),
		"middle":    flip(good, len(good)/2),
		"end":       flip(good, len(good)-40),
		"truncated": good[:len(good)-100],
	} {
		path := filepath.Join(dir, name+".snap")
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := cli(t, "", "snapshot", "inspect", path)
		if code != 1 || !strings.Contains(out, "FAILED") && !strings.Contains(out, "corrupt") {
			t.Errorf("inspect of a %s-corrupted file: exit %d\n%s", name, code, out)
		}
		if _, code := cli(t, "", "snapshot", "restore", path, "--data-dir", filepath.Join(dir, name), "--node-id", "x", "--raft-addr", "127.0.0.1:1"); code == 0 {
			t.Errorf("restore of a %s-corrupted file succeeded", name)
		}
	}
}

func flip(b []byte, at int) []byte {
	out := append([]byte(nil), b...)
	out[at] ^= 0x10
	return out
}

// compareWithSnapshot checks that server 0 of r serves the snapshot's
// stream and its generation-0 index records exactly, and the same state
// hash when it has applied nothing since.
func compareWithSnapshot(t *testing.T, r *proc.Cluster, snap *fsm.Machine, stream uint64) {
	t.Helper()
	want, _ := snap.Stream(stream)
	got, err := r.Describe(0, stream)
	if err != nil {
		t.Fatal(err)
	}
	if got.CommittedEnd != want.CommittedEnd || got.WriterEpoch != want.WriterEpoch || got.Trim != want.Trim ||
		got.Version != want.Version || got.Name != want.Name || uint32(got.Status) != uint32(want.Status) {
		t.Fatalf("restored stream %+v, snapshot %+v", got, want)
	}
	recs := gen0Records(t, r, 0, stream)
	ref := snap.Records(stream, fsm.Committed, 0, 0, 1<<30)
	if len(recs) != len(ref) {
		t.Fatalf("restored node lists %d index records, snapshot holds %d", len(recs), len(ref))
	}
	for i, rec := range recs {
		if rec.Record.Range.Start != ref[i].Range.Start || rec.Record.Range.End != ref[i].Range.End ||
			rec.Version != ref[i].Version || rec.Record.Object.Key != ref[i].Object.Key || rec.Record.Checksum != ref[i].Checksum {
			t.Fatalf("record %d: restored %v, snapshot %+v", i, rec, ref[i])
		}
	}
	checkContiguous(t, recs, want.CommittedEnd)
	st, err := r.Client(0).Cluster.Status(ctxT(t, 10*time.Second), &metadpb.StatusRequest{WithHash: true})
	if err != nil {
		t.Fatal(err)
	}
	hash, _, _ := snap.StateHash()
	switch n := st.Nodes[0]; {
	case n.AppliedIndex != snap.AppliedIndex():
		t.Logf("the restored node applied commands of its own (at %d, snapshot at %d); state hash not compared", n.AppliedIndex, snap.AppliedIndex())
	case hex.EncodeToString(n.StateHash) != hex.EncodeToString(hash[:]):
		t.Errorf("restored node at the snapshot's index %d has state hash %x, snapshot %x", n.AppliedIndex, n.StateHash, hash)
	default:
		t.Logf("restored node's state hash equals the snapshot's at index %d", n.AppliedIndex)
	}
}
