package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/node"
	"github.com/metad/metad/raftstore"
)

func newDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Inspect or recover the data dir of a stopped server (offline)",
		Long: `Commands on the data dir of a stopped server. They refuse to touch a data dir
a running server holds.

  inspect  what the node holds: term, vote, log, snapshots, configuration, and
           the state its log would produce
  log      the log's entries: index, term, operation, digest
  snapshot the state its log produces up to an index, as a snapshot file
           (to diff against a live member's, or to restore elsewhere)
  recover  rewrite the Raft configuration to restart a cluster that lost its
           quorum from the servers that survive (like Consul's peers.json)`,
	}
	cmd.AddCommand(newDataInspectCmd(), newDataLogCmd(), newDataSnapshotCmd(), newDataRecoverCmd())
	return cmd
}

func newDataLogCmd() *cobra.Command {
	var (
		dataDir, output string
		from, to        uint64
	)
	cmd := &cobra.Command{
		Use:   "log",
		Short: "List the Raft log entries of a stopped server",
		Long: `List the Raft log entries of a stopped server, committed or not: index, term,
kind (the command's operation, e.g. CommitAppend, or Raft's own entry type)
and the first 8 bytes of the SHA-256 of the entry's data. Two servers' logs
hold the same entry at an index exactly when these agree; the first index
where they do not is where the servers' histories part.`,
		Example: `  metad data log --data-dir ./data-n1 --from 6080 --to 6090
  metad data log --data-dir /var/lib/metad -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return usageError{fmt.Errorf("--output %q: want table or json", output)}
			}
			if to != 0 && to < from {
				return usageError{fmt.Errorf("--to %d is below --from %d", to, from)}
			}
			if _, err := inspectDataDir(dataDir, false); err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			enc := json.NewEncoder(w)
			return raftstore.ReadLog(node.RaftDir(dataDir), from, to, func(e raftstore.LogEntry) error {
				if output == "json" {
					return enc.Encode(logEntryJSON{Index: e.Index, Term: e.Term, Kind: e.Kind, Digest: hex.EncodeToString(e.Digest[:])})
				}
				_, err := fmt.Fprintln(w, e)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", node.DefaultDataDir, "the stopped server's data dir")
	cmd.Flags().Uint64Var(&from, "from", 0, "first index to list (default: the log's first)")
	cmd.Flags().Uint64Var(&to, "to", 0, "last index to list (default: the log's last)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, or json (one object per line)")
	return cmd
}

// logEntryJSON is one line of `metad data log -o json`.
type logEntryJSON struct {
	Index  uint64 `json:"index"`
	Term   uint64 `json:"term"`
	Kind   string `json:"kind"`
	Digest string `json:"digest"`
}

func newDataSnapshotCmd() *cobra.Command {
	var (
		dataDir string
		index   uint64
		force   bool
	)
	cmd := &cobra.Command{
		Use:   "snapshot FILE",
		Short: "Write the state a stopped server's log produces as a snapshot file",
		Long: `Rebuild the state a stopped server's data dir produces (its newest snapshot,
then every log entry up to --index, committed or not) and write it to FILE
as a snapshot file, like snapshot save writes from a live member. Diff it
against a snapshot the server served at the same index (snapshot diff) to
see whether its live state was the one its log gives; inspect or restore it
like any snapshot file. The file's configuration is the latest the data dir
holds. An existing FILE is refused (exit 2) unless --force replaces it, as
snapshot save does.`,
		Example: `  metad data snapshot n1-log.snap --data-dir ./data-n1 --index 29447
  metad snapshot diff n1-live.snap n1-log.snap`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := os.Stat(args[0]); err == nil && !force {
				return usageError{fmt.Errorf("%s exists; --force replaces it", args[0])}
			}
			rep, err := inspectDataDir(dataDir, false)
			if err != nil {
				return err
			}
			meta, err := writeReplayFile(args[0], rep, index)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: index %d, term %d, from %s's log\n", args[0], meta.Index, meta.Term, meta.NodeID)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", node.DefaultDataDir, "the stopped server's data dir")
	cmd.Flags().Uint64Var(&index, "index", 0, "replay up to this index (default: the whole log)")
	cmd.Flags().BoolVar(&force, "force", false, "replace FILE if it exists")
	return cmd
}

// writeReplayFile replays the data dir of rep up to index (0: all of it)
// into a snapshot file at path (writeFileAtomically).
func writeReplayFile(path string, rep *dataReport, index uint64) (raftstore.FileMeta, error) {
	lo, hi := rep.Raft.ReplayRange()
	switch {
	case index == 0:
		index = hi
	case index > hi:
		return raftstore.FileMeta{}, usageError{fmt.Errorf("--index %d: beyond what data dir %s holds: its highest index is %d", index, rep.DataDir, hi)}
	case index < lo:
		return raftstore.FileMeta{}, usageError{fmt.Errorf("--index %d: below the newest snapshot of data dir %s (index %d): the log before it is compacted, so %d is the lowest index it can rebuild",
			index, rep.DataDir, lo, lo)}
	}
	var stream bytes.Buffer
	at, term, err := raftstore.ReplayDirTo(node.RaftDir(rep.DataDir), index, &stream)
	if err != nil {
		return raftstore.FileMeta{}, err
	}
	meta := raftstore.FileMeta{NodeID: rep.NodeID, Index: at, Term: term, TakenAt: clock.Real.Now().UTC(), Servers: rep.Raft.Servers}
	err = writeFileAtomically(path, func(f *os.File) error {
		fw, err := raftstore.NewFileWriter(f, meta)
		if err == nil {
			_, err = stream.WriteTo(fw)
		}
		if err == nil {
			_, err = fw.Close()
		}
		if err == nil {
			err = f.Sync()
		}
		return err
	}, nil)
	return meta, err
}

type dataReport struct {
	DataDir string            `json:"data_dir"`
	NodeID  string            `json:"node_id"`
	Raft    raftstore.DirInfo `json:"raft"`
}

func newDataInspectCmd() *cobra.Command {
	var (
		dataDir, output string
		noReplay        bool
	)
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Describe the data dir of a stopped server",
		Long: `Describe the data dir of a stopped server: its node id, Raft term and vote,
the range of its log, its snapshots, the latest Raft configuration it knows,
and (unless --no-replay) the state it would serve: the newest snapshot
restored and every log entry after it applied, committed or not, with the
state hash and the record counts. Use it to compare survivors before a
recovery: the one with the highest last log term, then index, has the most.`,
		Example: `  metad data inspect --data-dir /var/lib/metad
  metad data inspect --data-dir ./data-n1 -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return usageError{fmt.Errorf("--output %q: want table or json", output)}
			}
			rep, err := inspectDataDir(dataDir, !noReplay)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			printDataReport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", node.DefaultDataDir, "the stopped server's data dir")
	cmd.Flags().BoolVar(&noReplay, "no-replay", false, "skip rebuilding the state (faster on a large state)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// heldLocks keeps the data dir locks an offline command took until it
// exits (an unreferenced *os.File would be closed by its finalizer,
// releasing the lock early).
var heldLocks = map[string]*os.File{}

// holdDataDir locks a data dir for the rest of the command, refusing one
// a running server holds ("data dir D is in use by pid N").
func holdDataDir(dataDir string) error {
	if _, ok := heldLocks[dataDir]; ok {
		return nil // a second flock from this process would refuse itself
	}
	f, err := node.LockDataDir(dataDir)
	if err != nil {
		return err
	}
	heldLocks[dataDir] = f
	return nil
}

func inspectDataDir(dataDir string, replay bool) (*dataReport, error) {
	id, err := node.StoredNodeID(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no node id: not a metad data dir (or never started)", dataDir)
	}
	if err != nil {
		return nil, err
	}
	if err := holdDataDir(dataDir); err != nil {
		return nil, err
	}
	info, err := raftstore.InspectDir(node.RaftDir(dataDir), replay)
	if err != nil {
		return nil, err
	}
	return &dataReport{DataDir: dataDir, NodeID: id, Raft: info}, nil
}

func printDataReport(w io.Writer, rep *dataReport) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defer tw.Flush()
	r := rep.Raft
	fmt.Fprintf(tw, "Data dir\t%s\n", rep.DataDir)
	fmt.Fprintf(tw, "Node id\t%s\n", rep.NodeID)
	fmt.Fprintf(tw, "Current term\t%d\n", r.CurrentTerm)
	vote := "-"
	if r.LastVoteFor != "" {
		vote = fmt.Sprintf("%s in term %d", r.LastVoteFor, r.LastVoteTerm)
	}
	fmt.Fprintf(tw, "Last vote\t%s\n", vote)
	logs := "empty"
	if r.LastIndex > 0 {
		logs = fmt.Sprintf("entries %d..%d", r.FirstIndex, r.LastIndex)
	}
	fmt.Fprintf(tw, "Log\t%s, last term %d (log store %s)\n", logs, r.LastTerm, r.LogStore)
	fmt.Fprintf(tw, "Configuration\tat index %d: %s\n", r.ConfigIndex, serversString(r.Servers))
	for i, s := range r.Snapshots {
		label := ""
		if i == 0 {
			label = "Snapshots"
		}
		fmt.Fprintf(tw, "%s\t%s: index %d, term %d, %s\n", label, s.ID, s.Index, s.Term, humanBytes(s.Size))
	}
	if len(r.Snapshots) == 0 {
		fmt.Fprintf(tw, "Snapshots\tnone\n")
	}
	if st := r.State; st != nil {
		fmt.Fprintf(tw, "State\tindex %d (last command %d), hash %s\n", st.AppliedIndex, st.LastCommand, hex.EncodeToString(st.Hash[:]))
		fmt.Fprintf(tw, "\t(the newest snapshot plus every entry of the log, committed or not)\n")
		types := make([]string, 0, len(st.Counts))
		for t := range st.Counts {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			fmt.Fprintf(tw, "\t%s: %d\n", t, st.Counts[t])
		}
	}
}

func newDataRecoverCmd() *cobra.Command {
	var (
		dataDir, peersFile string
		servers            []string
		yes                bool
	)
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Restart a cluster that lost its quorum from the servers that survive (offline, DANGEROUS)",
		Long: `Rewrite the Raft configuration of a stopped server so that a cluster that lost
its quorum for good (a majority of its servers destroyed) can be restarted
from the servers that survive. It does what raft.RecoverCluster and Consul's
peers.json do: restore the newest snapshot, apply every entry of the server's
log (committed or not), write a new snapshot carrying the new configuration,
and empty the log.

This is a last resort. Writes the lost majority acknowledged but this server
never received are gone, and entries this server has that were never
committed are kept. Never run it while the old servers could come back.

The new configuration is, in order of precedence: --peers-file (Consul's
peers.json format: [{"id": "n1", "address": "10.0.0.1:7421", "non_voter":
false}]), the --server ID=RAFT_ADDR flags, or this server alone at its address
in the current configuration. Steps (README: "Recovering from a lost quorum"):

  1. Stop every surviving server (metad refuses to touch a running one).
  2. metad data inspect on each survivor; pick the one with the highest last
     log term, then index. With more than one survivor, recover only that
     one, start it, and add the others back with fresh data dirs.
  3. metad data recover --data-dir DIR on it, and type its node id to confirm.
  4. Start it with its usual command: it elects itself and serves.
  5. Add new servers with empty data dirs and --join; they are added and
     promoted automatically. Wipe the data dir of any old server before it
     comes back.`,
		Example: `  metad data recover --data-dir /var/lib/metad
  metad data recover --data-dir ./data-n1 --server n1=127.0.0.1:7411 --yes
  metad data recover --data-dir /var/lib/metad --peers-file peers.json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return recoverDataDir(cmd, dataDir, peersFile, servers, yes)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", node.DefaultDataDir, "the stopped server's data dir")
	cmd.Flags().StringVar(&peersFile, "peers-file", "", "JSON file with the new configuration (Consul peers.json format)")
	cmd.Flags().StringArrayVar(&servers, "server", nil, "ID=RAFT_ADDR[,nonvoter] of the new configuration (repeatable; default this server alone)")
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	return cmd
}

func recoverDataDir(cmd *cobra.Command, dataDir, peersFile string, specs []string, yes bool) error {
	if peersFile != "" && len(specs) > 0 { // before reading anything
		return usageError{errors.New("give --peers-file or --server, not both")}
	}
	before, err := inspectDataDir(dataDir, true)
	if err != nil {
		return err
	}
	servers, err := newConfiguration(before, peersFile, specs)
	if err != nil {
		return err
	}
	printRecoveryPlan(cmd.ErrOrStderr(), before, servers)
	if !yes {
		if err := confirm(cmd.InOrStdin(), cmd.ErrOrStderr(), before.NodeID); err != nil {
			return err
		}
	}
	after, err := raftstore.RecoverDir(node.RaftDir(dataDir), servers, nil)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "recovered %s (%s): configuration %s; state at index %d, hash %s\n",
		dataDir, before.NodeID, serversString(after.Servers), after.State.AppliedIndex, hex.EncodeToString(after.State.Hash[:]))
	fmt.Fprintf(out, "next: start this server with its usual command; add servers with empty data dirs and --join.\n")
	return nil
}

// peerEntry is one server of a Consul-style peers.json.
type peerEntry struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	NonVoter bool   `json:"non_voter"`
}

// newConfiguration chooses the recovered configuration (see the command's
// help) and checks that this server is a voter in it.
func newConfiguration(rep *dataReport, peersFile string, specs []string) ([]raftstore.Server, error) {
	var servers []raftstore.Server
	switch {
	case peersFile != "" && len(specs) > 0:
		return nil, usageError{errors.New("give --peers-file or --server, not both")}
	case peersFile != "":
		b, err := os.ReadFile(peersFile)
		if err != nil {
			return nil, err
		}
		var peers []peerEntry
		if err := json.Unmarshal(b, &peers); err != nil {
			return nil, usageError{fmt.Errorf("%s: %w", peersFile, err)}
		}
		for _, p := range peers {
			s := raftstore.Server{ID: p.ID, Address: p.Address, Suffrage: raftstore.Voter}
			if p.NonVoter {
				s.Suffrage = raftstore.Nonvoter
			}
			servers = append(servers, s)
		}
	case len(specs) > 0:
		var err error
		if servers, err = parseServers(specs); err != nil {
			return nil, usageError{err}
		}
	default:
		for _, s := range rep.Raft.Servers {
			if s.ID == rep.NodeID {
				servers = []raftstore.Server{{ID: s.ID, Address: s.Address, Suffrage: raftstore.Voter}}
			}
		}
		if servers == nil {
			return nil, usageError{fmt.Errorf("%s is not in its own configuration; give its address with --server %s=RAFT_ADDR", rep.NodeID, rep.NodeID)}
		}
	}
	if err := raftstore.CheckServers(servers); err != nil {
		from := "--server"
		switch {
		case peersFile != "":
			from = "--peers-file " + peersFile
		case len(specs) == 0:
			from = "its address in " + rep.DataDir + " (give one with --server " + rep.NodeID + "=RAFT_ADDR)"
		}
		return nil, usageError{fmt.Errorf("%s: %w", from, err)}
	}
	for _, s := range servers {
		if s.ID == rep.NodeID && s.Suffrage == raftstore.Voter {
			return servers, nil
		}
	}
	return nil, usageError{fmt.Errorf("this server (%s) must be a voter of the new configuration, or it could never elect a leader", rep.NodeID)}
}

func printRecoveryPlan(w io.Writer, rep *dataReport, servers []raftstore.Server) {
	r := rep.Raft
	bar := strings.Repeat("!", 78)
	fmt.Fprintf(w, "%s\n!!  QUORUM-LOSS RECOVERY: this rewrites the Raft configuration of %s.\n%s\n", bar, rep.NodeID, bar)
	fmt.Fprintf(w, "data dir            %s\n", rep.DataDir)
	fmt.Fprintf(w, "current config      (index %d) %s\n", r.ConfigIndex, serversString(r.Servers))
	fmt.Fprintf(w, "NEW config          %s\n", serversString(servers))
	fmt.Fprintf(w, "this server's log   up to index %d, term %d\n", r.LastIndex, r.LastTerm)
	if st := r.State; st != nil {
		fmt.Fprintf(w, "state kept          index %d, hash %s, %d streams\n", st.AppliedIndex, hex.EncodeToString(st.Hash[:]), st.Counts["stream"])
	}
	fmt.Fprintf(w, `
Writes this server never received are lost; entries in its log that were never
committed are applied. Servers left out must NEVER rejoin with their old data:
wipe their data dirs first. Run this on one server only, unless every server of
the new configuration has exactly this state.
`)
}

// confirm asks for the node id on in; anything else aborts.
func confirm(in io.Reader, out io.Writer, nodeID string) error {
	fmt.Fprintf(out, "\nType the node id (%s) to proceed: ", nodeID)
	line, err := bufio.NewReader(in).ReadString('\n')
	if strings.TrimSpace(line) == nodeID {
		return nil
	}
	if err != nil && err != io.EOF {
		return err
	}
	return errors.New("not confirmed; nothing changed (use --yes in scripts)")
}
