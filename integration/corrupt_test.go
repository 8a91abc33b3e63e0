package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// TestCorruptLogSegmentIsRefusedThenWipedAndRejoined: a byte flipped in a
// follower's raft-wal segment (inside the entry that created a stream) is
// caught when the follower reads it back: it stops, naming the entry and
// its log. The documented way back — wipe the data dir, start it again
// under its node id — brings it back by InstallSnapshot with every
// acknowledged append, while the other two commit.
func TestCorruptLogSegmentIsRefusedThenWipedAndRejoined(t *testing.T) {
	// Small snapshots and a short trailing log: once the victim is down the
	// leader compacts past everything the victim had, so a wiped victim can
	// only catch up by InstallSnapshot.
	// The victim keeps its log in raft-wal, the others in raft.db: raft-wal
	// frees only whole 64 MiB segments, and a leader on it would serve the
	// wiped victim from its tail segment instead of a snapshot.
	c := proc.New(t, 3, "--raft-snapshot-threshold", "64", "--raft-snapshot-interval", "200ms", "--raft-trailing-logs", "8")
	const victim = 2
	for i, nd := range c.Nodes {
		store := "bolt"
		if i == victim {
			store = "wal"
		}
		nd.Args = append(nd.Args, "--raft-log-store", store)
	}
	c.StartAll()
	c.WaitFormed(3)
	leadElsewhere(t, c, victim)
	var healthy []int
	for i := range c.Nodes {
		if i != victim {
			healthy = append(healthy, i)
		}
	}
	cl := c.Client(healthy...)
	w := proc.NewWriter(t, cl, "corrupt")
	w.MustAppend(t, 5)
	const needle = "needle-0123456789abcdef"
	if _, err := client.Call(ctxT(t, 10*time.Second), cl, cl.Metad.CreateStream,
		&metadpb.CreateStreamRequest{Name: needle, RequestId: client.NewRequestID()}); err != nil {
		t.Fatal(err)
	}
	w.MustAppend(t, 5)
	holds := func(i int, end uint64) bool {
		vc := c.Client(i)
		a, err := client.Call(ctxT(t, 5*time.Second), vc, vc.Metad.DescribeStream,
			&metadpb.DescribeStreamRequest{StreamId: w.Stream, Consistency: metadpb.Consistency_STALE})
		if err != nil || a.Stream.CommittedEnd < end {
			return false
		}
		_, err = client.Call(ctxT(t, 5*time.Second), vc, vc.Metad.DescribeStream,
			&metadpb.DescribeStreamRequest{Name: needle, Consistency: metadpb.Consistency_STALE})
		return err == nil
	}
	acked := w.End
	c.WaitFor("the victim holds the needle and the appends", 30*time.Second, func() bool { return holds(victim, acked) })
	c.Stop(victim)
	dataDir := c.Nodes[victim].DataDir
	if file := flipAll(t, dataDir, []byte(needle)); !strings.HasSuffix(file, ".wal") {
		t.Fatalf("the needle was found in %s, want a raft-wal segment", file)
	}

	// The others go on, far past what the victim's log holds.
	for range 60 {
		w.MustAppend(t, 1)
	}
	acked = w.End

	logBefore := len(c.Log(victim))
	c.Start(victim)
	code, exited := c.WaitExit(victim, 30*time.Second)
	restart := c.Log(victim)[logBefore:]
	if !exited || code == 0 {
		t.Fatalf("the victim with a corrupt segment: exited %v, code %d; want it stopped\n%s", exited, code, tail(restart, 20))
	}
	if !strings.Contains(restart, "does not match its checksum") || !strings.Contains(restart, filepath.Join(dataDir, "raft", "wal")) {
		t.Fatalf("the victim's log does not name the corrupt entry and its log:\n%s", tail(restart, 20))
	}
	t.Logf("the victim stopped with exit status %d:\n%s", code, tail(restart, 2))
	if strings.Contains(restart, "Installed remote snapshot") {
		t.Fatal("the victim installed a snapshot over its corrupt log instead of stopping")
	}

	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	logBefore = len(c.Log(victim))
	c.Start(victim)
	c.WaitFor("the wiped victim holds every acknowledged append again", 60*time.Second, func() bool { return holds(victim, acked) })
	if !strings.Contains(c.Log(victim)[logBefore:], `msg="Installed remote snapshot"`) {
		t.Fatalf("the wiped victim caught up without InstallSnapshot:\n%s", c.Log(victim)[logBefore:])
	}
	w.MustAppend(t, 1)
}

// flipAll flips one byte of every occurrence of needle in the files under
// dir, the state store's aside (statestore's TestCorruptTableIsNamed corrupts
// that), and returns the last file it changed.
func flipAll(t *testing.T, dir string, needle []byte) string {
	t.Helper()
	var found string
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() && e.Name() == "state" {
			return filepath.SkipDir
		}
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(b, needle) {
			return err
		}
		for at := bytes.Index(b, needle); at >= 0; at = bytes.Index(b, needle) {
			b[at+len(needle)-1] ^= 0x01
		}
		found = path
		return os.WriteFile(path, b, 0o600)
	})
	if err != nil || found == "" {
		t.Fatal(fmt.Errorf("flip %q under %s: %w (found %q)", needle, dir, err, found))
	}
	return found
}
