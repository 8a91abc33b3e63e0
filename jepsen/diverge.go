package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/node"
	"github.com/metad/metad/raftstore"
)

// divergenceFile is where a run whose replicas did not converge says how
// they differ.
const divergenceFile = "divergence.txt"

// diffShown bounds the differing records written per pair of nodes.
const diffShown = 20

// explainLive saves a snapshot of every node's live state (metad snapshot
// save --addr, taken at each node's own read index) and diffs the first
// node's against each other's, record by record. It writes the report to
// divergenceFile and returns a one-line summary for the anomaly.
func explainLive(ctx context.Context, cfg RunConfig, cl *cluster.Cluster) string {
	var b strings.Builder
	b.WriteString("The live states of the nodes, record by record (metad snapshot diff):\n\n")
	snaps := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		path := filepath.Join(cfg.Dir, "cluster", n.ID+".snap")
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(sctx, cfg.Binary, "snapshot", "save", path, "--addr", n.GRPC).CombinedOutput()
		cancel()
		if err != nil {
			fmt.Fprintf(&b, "%s: snapshot save failed: %v\n%s\n", n.ID, err, out)
			continue
		}
		snaps[i] = path
	}
	var summary []string
	for i := 1; i < len(snaps); i++ {
		if snaps[0] == "" || snaps[i] == "" {
			continue
		}
		pair := cl.Nodes[0].ID + " vs " + cl.Nodes[i].ID
		// Exit 1 means the states differ (or a file did not verify): the
		// output says which.
		out, _ := exec.CommandContext(ctx, cfg.Binary, "snapshot", "diff", snaps[0], snaps[i],
			"--limit", strconv.Itoa(diffShown)).CombinedOutput()
		fmt.Fprintf(&b, "== %s\n%s\n", pair, out)
		summary = append(summary, pair+": "+diffVerdict(string(out)))
	}
	writeDivergence(cfg, b.String(), false)
	return strings.Join(summary, "; ") + " (see " + divergenceFile + ")"
}

// diffVerdict is the gist of `metad snapshot diff` output: its last line
// (same, or how many records differ) and the first differing record's key.
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

// explainLogs rebuilds each stopped node's state from its own raft log
// (metad data inspect) and appends the result to divergenceFile: if the
// logs replay to one state while the live states differed, a node's live
// state left its log (an apply that is not deterministic, or a change made
// outside apply); if the replays differ too, the logs themselves differ.
func explainLogs(cfg RunConfig, cl *cluster.Cluster) string {
	var b strings.Builder
	b.WriteString("Each node's state rebuilt offline from its own data dir (metad data inspect):\n\n")
	hashes := map[string][]string{}
	for _, n := range cl.Nodes {
		info, err := raftstore.InspectDir(node.RaftDir(n.DataDir), true)
		if err != nil || info.State == nil {
			fmt.Fprintf(&b, "%s: inspect failed: %v\n", n.ID, err)
			continue
		}
		st := info.State
		fmt.Fprintf(&b, "%s: log %d..%d (last term %d), replayed to index %d (last command %d), hash %s\n",
			n.ID, info.FirstIndex, info.LastIndex, info.LastTerm, st.AppliedIndex, st.LastCommand, st.HashHex)
		key := fmt.Sprintf("%d/%s", st.LastCommand, st.HashHex)
		hashes[key] = append(hashes[key], n.ID)
	}
	verdict := "the logs replay to different states"
	if len(hashes) == 1 {
		verdict = "every log replays to the same state, so a live state left its log"
	} else if first := firstLogDifference(&b, cl); first != "" {
		verdict += "; " + first
	}
	fmt.Fprintf(&b, "\n%s\n", verdict)
	writeDivergence(cfg, b.String(), true)
	return verdict
}

// firstLogDifference reads every node's log and writes to b the first index
// at which two logs hold different entries, with a few entries around it;
// it returns a one-line description.
func firstLogDifference(b *strings.Builder, cl *cluster.Cluster) string {
	logs := make([]map[uint64]raftstore.LogEntry, len(cl.Nodes))
	lo, hi := uint64(0), ^uint64(0)
	for i, n := range cl.Nodes {
		logs[i] = map[uint64]raftstore.LogEntry{}
		var first, last uint64
		err := raftstore.ReadLog(node.RaftDir(n.DataDir), func(e raftstore.LogEntry) error {
			if first == 0 {
				first = e.Index
			}
			last = e.Index
			logs[i][e.Index] = e
			return nil
		})
		if err != nil {
			fmt.Fprintf(b, "%s: read log: %v\n", n.ID, err)
			return ""
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
		fmt.Fprintf(b, "\nThe logs first differ at index %d (entries from %d):\n", idx, max(lo, idx-2))
		sameTerm := true
		for i, n := range cl.Nodes {
			fmt.Fprintf(b, "%s:\n", n.ID)
			for j := max(lo, idx-2); j <= min(hi, idx+5); j++ {
				fmt.Fprintf(b, "  %v\n", logs[i][j])
			}
			sameTerm = sameTerm && logs[i][idx].Term == logs[0][idx].Term
		}
		what := fmt.Sprintf("the logs first differ at index %d", idx)
		if sameTerm {
			what += ", under the same term: raft's log matching was broken"
		}
		return what
	}
	return fmt.Sprintf("the logs agree on every index %d..%d that all of them hold", lo, hi)
}

func writeDivergence(cfg RunConfig, text string, appendTo bool) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(filepath.Join(cfg.Dir, divergenceFile), flags, 0o644)
	if err != nil {
		cfg.Log.Error("write divergence report", "err", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		cfg.Log.Error("write divergence report", "err", err)
	}
}
