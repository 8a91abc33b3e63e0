package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/node"
	"github.com/metad/metad/raftstore"
)

// divergenceFile is where a run whose replicas did not converge says how
// they differ.
const divergenceFile = "divergence.txt"

// diffShown bounds the differing records written per node.
const diffShown = 20

// explainDivergence tells two ways replicas part apart, and writes the
// evidence to divergenceFile:
//
//   - a live state that left its own log (an apply that is not
//     deterministic, or a change made outside apply): every node's live
//     state is saved (metad snapshot save --addr, at the node's read index),
//     the node is stopped, its own log is replayed offline to the same index,
//     and the two are diffed record by record;
//   - logs that differ (raft broke log matching): the logs are compared
//     entry by entry and the first index where they differ is shown.
//
// The nodes are stopped on return; their data dirs are the evidence. It
// returns a one-line summary for the anomaly.
func explainDivergence(ctx context.Context, cfg RunConfig, cl *cluster.Cluster) string {
	var b strings.Builder
	live := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		path := filepath.Join(cfg.Dir, "cluster", n.ID+".snap")
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(sctx, cfg.Binary, "snapshot", "save", path, "--addr", n.GRPC).CombinedOutput()
		cancel()
		if err != nil {
			fmt.Fprintf(&b, "%s: snapshot save failed: %v\n%s\n", n.ID, err, out)
			continue
		}
		live[i] = path
	}
	for i := range cl.Nodes {
		cl.Kill(i)
	}
	b.WriteString("Each node's live state against its own log replayed to the same index:\n\n")
	var summary []string
	for i, n := range cl.Nodes {
		if live[i] == "" {
			continue
		}
		if s := liveAgainstLog(&b, n, live[i]); s != "" {
			summary = append(summary, s)
		}
	}
	if len(summary) == 0 {
		summary = append(summary, "every live state is its log's")
	}
	summary = append(summary, compareLogs(&b, cl))
	writeDivergence(cfg, b.String())
	return strings.Join(summary, "; ") + " (see " + divergenceFile + ")"
}

// liveAgainstLog diffs a node's live snapshot with its log replayed to the
// snapshot's index, writes the result to b, and returns a summary if they
// differ.
func liveAgainstLog(b *strings.Builder, n *cluster.Node, livePath string) string {
	f, err := os.Open(livePath)
	if err != nil {
		fmt.Fprintf(b, "%s: %v\n", n.ID, err)
		return ""
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		fmt.Fprintf(b, "%s: %v\n", n.ID, err)
		return ""
	}
	sf, err := raftstore.OpenFile(f, info.Size())
	if err != nil {
		fmt.Fprintf(b, "%s: %v\n", n.ID, err)
		return ""
	}
	var replay bytes.Buffer
	at, err := raftstore.ReplayDirTo(node.RaftDir(n.DataDir), sf.Meta.Index, &replay)
	if err != nil {
		fmt.Fprintf(b, "%s: replay: %v\n", n.ID, err)
		return ""
	}
	fmt.Fprintf(b, "== %s: live at index %d (A), its log replayed to %d (B)\n", n.ID, sf.Meta.Index, at)
	differ, first := 0, ""
	_, _, err = raftstore.DiffStreams(sf.Stream(), &replay, func(d fsm.RecordDiff) error {
		text := d.String()
		if differ == 0 {
			first, _, _ = strings.Cut(text, "\n")
		}
		differ++
		if differ <= diffShown {
			fmt.Fprintln(b, text)
		}
		return nil
	})
	switch {
	case err != nil:
		fmt.Fprintf(b, "diff: %v\n\n", err)
		return n.ID + ": diff failed"
	case differ == 0:
		b.WriteString("the same\n\n")
		return ""
	}
	if differ > diffShown {
		fmt.Fprintf(b, "(%d more)\n", differ-diffShown)
	}
	b.WriteString("\n")
	return fmt.Sprintf("%s's live state left its log: %d records differ, first %s", n.ID, differ, first)
}

// compareLogs reads every stopped node's log, writes to b the first index
// at which two logs hold different entries, with the entries around it
// from every node, and returns a one-line description.
func compareLogs(b *strings.Builder, cl *cluster.Cluster) string {
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
			return "logs not compared"
		}
		lo, hi = max(lo, first), min(hi, last)
	}
	b.WriteString("The nodes' logs, entry by entry:\n\n")
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

func writeDivergence(cfg RunConfig, text string) {
	if err := os.WriteFile(filepath.Join(cfg.Dir, divergenceFile), []byte(text), 0o644); err != nil {
		cfg.Log.Error("write divergence report", "err", err)
	}
}
