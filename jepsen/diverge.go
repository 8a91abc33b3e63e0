package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metad/metad/jepsen/cluster"
)

// divergenceFile is where a run whose replicas did not converge says how
// they differ.
const divergenceFile = "divergence.txt"

// diffShown bounds the differing records written per node.
const diffShown = 20

// explainDivergence tells apart the two ways replicas part, and writes the
// evidence to divergenceFile. Like the rest of the harness it sees metad
// only from outside, here through the binary's operator commands:
//
//   - a live state that left its own log (an apply that is not
//     deterministic, or a change made outside apply): every node's live
//     state is saved (snapshot save --addr, at the node's read index), the
//     nodes are stopped, each node's own log is rebuilt to the same index
//     (data snapshot --index) and the two are diffed (snapshot diff);
//   - logs that differ (raft broke log matching): the logs are listed (data
//     log) and the first index where they differ is shown with the entries
//     around it.
//
// The nodes are stopped on return; their data dirs are the evidence. It
// returns a one-line summary for the anomaly.
func explainDivergence(ctx context.Context, cfg RunConfig, cl *cluster.Cluster) string {
	var b strings.Builder
	dir := filepath.Join(cfg.Dir, "cluster")
	live := make([]uint64, len(cl.Nodes)) // index of each live snapshot; 0: none
	for i, n := range cl.Nodes {
		out, code := metad(ctx, cfg, "snapshot", "save", filepath.Join(dir, n.ID+"-live.snap"), "--addr", n.GRPC, "-o", "json")
		var saved struct {
			Index uint64 `json:"index"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &saved) != nil {
			fmt.Fprintf(&b, "%s: snapshot save failed (exit %d):\n%s\n", n.ID, code, out)
			continue
		}
		live[i] = saved.Index
	}
	for i := range cl.Nodes {
		cl.Kill(i)
	}
	b.WriteString("Each node's live state (A) against its own log rebuilt to the same index (B):\n\n")
	var summary []string
	for i, n := range cl.Nodes {
		if live[i] == 0 {
			continue
		}
		liveFile, logFile := filepath.Join(dir, n.ID+"-live.snap"), filepath.Join(dir, n.ID+"-log.snap")
		fmt.Fprintf(&b, "== %s at index %d\n", n.ID, live[i])
		out, code := metad(ctx, cfg, "data", "snapshot", logFile, "--data-dir", n.DataDir, "--index", strconv.FormatUint(live[i], 10))
		if code != 0 {
			fmt.Fprintf(&b, "data snapshot failed (exit %d):\n%s\n", code, out)
			continue
		}
		out, code = metad(ctx, cfg, "snapshot", "diff", liveFile, logFile, "--limit", strconv.Itoa(diffShown))
		fmt.Fprintf(&b, "%s\n", out)
		if code != 0 {
			summary = append(summary, n.ID+"'s live state left its log: "+diffVerdict(out))
		}
	}
	if len(summary) == 0 {
		summary = append(summary, "every live state is its log's")
	}
	summary = append(summary, compareLogs(ctx, cfg, cl, &b))
	if err := os.WriteFile(filepath.Join(cfg.Dir, divergenceFile), []byte(b.String()), 0o644); err != nil {
		cfg.Log.Error("write divergence report", "err", err)
	}
	return strings.Join(summary, "; ") + " (see " + divergenceFile + ")"
}

// metad runs the binary with args and returns its combined output and exit
// code (-1 if it could not run).
func metad(ctx context.Context, cfg RunConfig, args ...string) (string, int) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, cfg.Binary, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		return string(out) + err.Error(), -1
	}
	return string(out), 0
}

// diffVerdict is the gist of `metad snapshot diff` output: its last line
// (how many records differ) and the first differing record's key.
func diffVerdict(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	verdict := strings.TrimPrefix(lines[len(lines)-1], "metad: ")
	for _, l := range lines {
		if len(l) > 2 && strings.ContainsRune("~+-", rune(l[0])) && l[1] == ' ' {
			return verdict + ", first " + l
		}
	}
	return verdict
}

// logEntry is one line of `metad data log -o json`.
type logEntry struct {
	Index  uint64 `json:"index"`
	Term   uint64 `json:"term"`
	Kind   string `json:"kind"`
	Digest string `json:"digest"`
}

func (e logEntry) String() string {
	return fmt.Sprintf("index %d term %d %s %s", e.Index, e.Term, e.Kind, e.Digest)
}

// compareLogs lists every stopped node's log, writes to b the first index
// at which two logs hold different entries, with the entries around it
// from every node, and returns a one-line description.
func compareLogs(ctx context.Context, cfg RunConfig, cl *cluster.Cluster, b *strings.Builder) string {
	b.WriteString("The nodes' logs, entry by entry (metad data log):\n\n")
	logs := make([]map[uint64]logEntry, len(cl.Nodes))
	lo, hi := uint64(0), ^uint64(0)
	for i, n := range cl.Nodes {
		out, code := metad(ctx, cfg, "data", "log", "--data-dir", n.DataDir, "-o", "json")
		if code != 0 {
			fmt.Fprintf(b, "%s: data log failed (exit %d):\n%s\n", n.ID, code, out)
			return "logs not compared"
		}
		logs[i] = map[uint64]logEntry{}
		var first, last uint64
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var e logEntry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				fmt.Fprintf(b, "%s: data log: %v in %q\n", n.ID, err, sc.Text())
				return "logs not compared"
			}
			if first == 0 {
				first = e.Index
			}
			last = e.Index
			logs[i][e.Index] = e
		}
		lo, hi = max(lo, first), min(hi, last)
	}
	for idx := lo; idx <= hi; idx++ {
		same := true
		for i := range logs {
			same = same && logs[i][idx] == logs[0][idx]
		}
		if same {
			continue
		}
		from, to := max(lo, idx-2), min(hi, idx+5)
		fmt.Fprintf(b, "first differ at index %d (entries %d..%d):\n", idx, from, to)
		sameTerm := true
		for i, n := range cl.Nodes {
			fmt.Fprintf(b, "%s:\n", n.ID)
			for j := from; j <= to; j++ {
				fmt.Fprintf(b, "  %v\n", logs[i][j])
			}
			sameTerm = sameTerm && logs[i][idx].Term == logs[0][idx].Term
		}
		what := fmt.Sprintf("the logs first differ at index %d", idx)
		if sameTerm {
			what += ", under the same term: raft broke log matching"
		}
		return what
	}
	what := fmt.Sprintf("the logs agree on every index all of them hold (%d..%d)", lo, hi)
	fmt.Fprintln(b, what)
	return what
}
