package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/backup"
	"github.com/metad/metad/client"
	"github.com/metad/metad/cmd/internal/cliflags"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/node"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/raftstore"
)

func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a consistent snapshot of a live cluster, inspect it, restore it into a new cluster",
		Long: `A snapshot file holds the whole replicated state (streams, objects, index
records, pins, deduplication entries) as of one Raft index, with the source
cluster's configuration and a SHA-256 over everything.

  save     from a running cluster (any member; online, nothing is paused)
  inspect  a file: meta, record counts, every checksum and invariant
  diff     two files, record by record (say, of two members whose state
           hashes differ)
  restore  a file into the data dir of a new server (offline), which then
           starts as a cluster of the servers named at restore time
  list     the scheduled backups (metad server --backup-to) a directory or
           an s3:// prefix holds`,
	}
	cmd.AddCommand(newSnapshotSaveCmd(), newSnapshotInspectCmd(), newSnapshotDiffCmd(), newSnapshotRestoreCmd(), newSnapshotListCmd())
	return cmd
}

func newSnapshotSaveCmd() *cobra.Command {
	o := &clientOpts{}
	var force bool
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a consistent snapshot of a running cluster to FILE",
		Long: `Save a consistent snapshot of a running cluster to FILE. The member --addr
points at takes it at a linearizable read index, so the file holds every write
acknowledged before the command started; writes go on meanwhile (the state is
cloned copy-on-write, nothing is paused). Point --addr at a follower to spare
the leader the work. Without a leader it retries for 30s, then fails (exit 4);
--timeout bounds the whole transfer. The file is written to FILE.part, checked, synced, then
renamed to FILE, so FILE is never half-written. An existing FILE is refused
(exit 2) unless --force replaces it.`,
		Example: `  metad snapshot save backup.snap
  metad snapshot save /backups/metad-$(date +%F).snap --addr 10.0.0.3:7420`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir := filepath.Dir(args[0]); !isDir(dir) { // before asking the cluster for anything
				return usageError{fmt.Errorf("%s: directory %s does not exist", args[0], dir)}
			}
			if _, err := os.Stat(args[0]); err == nil && !force {
				return usageError{fmt.Errorf("%s exists; --force replaces it", args[0])}
			}
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				res, err := saveSnapshot(ctx, c, args[0], cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				return o.printJSON(cmd.OutOrStdout(), res, func(tw *tabwriter.Writer) {
					fmt.Fprintf(tw, "saved %s: index %d, term %d, from %s, %s, %d records\n", res.File, res.Index, res.Term,
						res.NodeID, humanBytes(res.Bytes), res.Records)
					fmt.Fprintf(tw, "sha256 %s\n", res.SHA256)
				})
			})
		},
	}
	o.registerWithTimeout(cmd, time.Hour)
	cmd.Flags().BoolVar(&force, "force", false, "replace FILE if it exists")
	return cmd
}

// saveResult is what `snapshot save` reports.
type saveResult struct {
	File    string    `json:"file"`
	NodeID  string    `json:"node_id"`
	Index   uint64    `json:"index"`
	Term    uint64    `json:"term"`
	TakenAt time.Time `json:"taken_at"`
	Bytes   int64     `json:"bytes"`
	Records uint64    `json:"records"`
	SHA256  string    `json:"sha256"`
}

// openedSnapshot is a Snapshot stream whose first message (the meta) has
// arrived; opening it is what client.Call retries.
type openedSnapshot struct {
	stream metadpb.Cluster_SnapshotClient
	meta   *metadpb.SnapshotMeta
	cancel context.CancelFunc // ends the stream
}

// openWait bounds how long save retries to open the stream (no leader, a
// leader not ready): the transfer itself may take up to --timeout.
const openWait = 30 * time.Second

func saveSnapshot(ctx context.Context, c *client.Client, path string, stderr io.Writer) (*saveResult, error) {
	// Each attempt's stream lives under the whole command's ctx; only the
	// retrying is bounded by openWait.
	open := func(_ context.Context, req *metadpb.SnapshotRequest, opts ...grpc.CallOption) (*openedSnapshot, error) {
		sctx, cancel := context.WithCancel(ctx)
		st, err := c.Cluster.Snapshot(sctx, req, opts...)
		if err != nil {
			cancel()
			return nil, err
		}
		first, err := st.Recv()
		if err == nil && first.Meta == nil {
			err = errors.New("snapshot: the server sent no meta")
		}
		if err != nil {
			cancel()
			return nil, err
		}
		return &openedSnapshot{stream: st, meta: first.Meta, cancel: cancel}, nil
	}
	openCtx, cancelOpen := context.WithTimeout(ctx, openWait)
	snap, err := client.Call(openCtx, c, open, &metadpb.SnapshotRequest{})
	cancelOpen()
	if err != nil {
		return nil, err
	}
	defer snap.cancel()
	meta := fileMetaOf(snap.meta)
	var res *saveResult
	err = writeFileAtomically(path, func(f *os.File) (err error) {
		res, err = writeSnapshotFile(f, snap, meta, stderr)
		return err
	}, func(part string) (err error) {
		res.Records, err = checkSavedFile(part, meta.Index)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.File = path
	return res, nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// writeFileAtomically writes path through path.part: write fills the file
// (and syncs it), check, if not nil, reads the closed part file back, and
// only then is it renamed to path, so path is never half-written. On any
// error the part file is removed.
func writeFileAtomically(path string, write func(*os.File) error, check func(part string) error) error {
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%w (remove a stale %s left by an interrupted write)", err, filepath.Base(part))
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: directory %s does not exist", path, filepath.Dir(path))
	case err != nil:
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && check != nil {
		err = check(part)
	}
	if err == nil {
		err = os.Rename(part, path)
	}
	if err != nil {
		os.Remove(part)
	}
	return err
}

// writeSnapshotFile receives the stream into f as a snapshot file and
// syncs it.
func writeSnapshotFile(f *os.File, snap *openedSnapshot, meta raftstore.FileMeta, stderr io.Writer) (*saveResult, error) {
	fw, err := raftstore.NewFileWriter(f, meta)
	if err != nil {
		return nil, err
	}
	bar := newProgress(stderr, "save", 0)
	w := bar.Writer(fw)
	for {
		chunk, err := snap.stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot: stream broke after %s: %w", humanBytes(fw.Size()), err)
		}
		if _, err := w.Write(chunk.Data); err != nil {
			return nil, err
		}
	}
	bar.Finish()
	sum, err := fw.Close()
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return nil, err
	}
	return &saveResult{NodeID: meta.NodeID, Index: meta.Index, Term: meta.Term, TakenAt: meta.TakenAt,
		Bytes: fw.Size(), SHA256: hex.EncodeToString(sum)}, nil
}

// checkSavedFile reads a written file back: checksum, stream header, and
// fsm's own checks. It returns the number of records.
func checkSavedFile(path string, index uint64) (uint64, error) {
	f, sf, err := openSnapshotFile(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := verifySnapshot(f, sf, nil); err != nil {
		return 0, err
	}
	sum, err := raftstore.SummarizeStream(sf.Stream())
	if err != nil {
		return 0, fmt.Errorf("snapshot: the saved stream does not verify: %w", err)
	}
	if sum.Index != index {
		return 0, fmt.Errorf("snapshot: stream header says index %d, meta %d", sum.Index, index)
	}
	return sum.FSM.Records, nil
}

func fileMetaOf(m *metadpb.SnapshotMeta) raftstore.FileMeta {
	meta := raftstore.FileMeta{NodeID: m.NodeId, Index: m.Index, Term: m.Term, TakenAt: m.TakenAt.AsTime()}
	for _, s := range m.Servers {
		meta.Servers = append(meta.Servers, raftstore.Server{ID: s.NodeId, Address: s.RaftAddr, Suffrage: raftstore.Suffrage(s.Suffrage)})
	}
	return meta
}

func openSnapshotFile(path string) (*os.File, *raftstore.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	sf, err := raftstore.OpenFile(f, st.Size())
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, sf, nil
}

func newSnapshotInspectCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Print a snapshot file's meta and record counts, and verify every checksum",
		Long: `Print a snapshot file's meta (source node, Raft index and term, time,
configuration), its size and per-type record counts, and verify it: the file's
SHA-256, the stream header, the fsm snapshot's header CRC, record count and
body SHA-256, the canonical record order and every state invariant (a full
restore into memory). Exits 1 if anything does not verify, 3 if there is no
such file. Offline: reads only the file.`,
		Example: `  metad snapshot inspect backup.snap
  metad snapshot inspect backup.snap -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return usageError{fmt.Errorf("--output %q: want table or json", output)}
			}
			if _, err := os.Stat(args[0]); errors.Is(err, os.ErrNotExist) {
				// Nothing to inspect: not a report of failed checks.
				return notFoundError{fmt.Errorf("snapshot file %s does not exist", args[0])}
			}
			rep, err := inspectSnapshot(args[0], cmd.ErrOrStderr())
			if output == "json" {
				if perr := writeJSON(cmd.OutOrStdout(), rep); perr != nil {
					return perr
				}
			} else {
				printInspect(cmd.OutOrStdout(), rep)
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// inspectReport is what `snapshot inspect` prints; fields stay empty past
// the first failed check.
type inspectReport struct {
	File        string              `json:"file"`
	Bytes       int64               `json:"bytes"`
	Meta        *raftstore.FileMeta `json:"meta,omitempty"`
	SHA256      string              `json:"sha256,omitempty"`
	StreamIndex uint64              `json:"stream_index"`
	FSMFormat   uint32              `json:"fsm_format"`
	FSMApplied  uint64              `json:"fsm_applied_index"`
	FSMRecords  uint64              `json:"fsm_records"`
	FSMChecksum string              `json:"fsm_body_sha256,omitempty"`
	Counts      map[string]uint64   `json:"record_counts,omitempty"`
	Checks      []check             `json:"checks"`
	Valid       bool                `json:"valid"`
}

type check struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

func (r *inspectReport) record(name string, err error) error {
	c := check{Name: name, OK: err == nil}
	if err != nil {
		c.Error = err.Error()
	}
	r.Checks = append(r.Checks, c)
	return err
}

func inspectSnapshot(path string, stderr io.Writer) (*inspectReport, error) {
	rep := &inspectReport{File: path}
	f, sf, err := openSnapshotFile(path)
	if err != nil {
		return rep, rep.record("envelope and meta", err)
	}
	defer f.Close()
	_ = rep.record("envelope and meta", nil) // a passed check: nothing to return
	st, _ := f.Stat()
	rep.Bytes, rep.Meta, rep.SHA256 = st.Size(), &sf.Meta, sf.Sum
	bar := newProgress(stderr, "verify", sf.VerifySize())
	err = verifySnapshot(f, sf, bar.Reader)
	bar.Finish()
	if rep.record("file SHA-256", err) != nil {
		return rep, err
	}
	bar = newProgress(stderr, "read", sf.StreamSize())
	sum, err := raftstore.SummarizeStream(bar.Reader(sf.Stream()))
	bar.Finish()
	rep.StreamIndex, rep.Counts = sum.Index, sum.Counts
	rep.FSMFormat, rep.FSMApplied, rep.FSMRecords = sum.FSM.Format, sum.FSM.AppliedIndex, sum.FSM.Records
	rep.FSMChecksum = hex.EncodeToString(sum.FSM.Checksum[:])
	if rep.record("stream header, fsm header CRC, record count, body SHA-256", err) != nil {
		return rep, err
	}
	if sum.Index != sf.Meta.Index {
		err = fmt.Errorf("stream header index %d, meta index %d", sum.Index, sf.Meta.Index)
	}
	if rep.record("meta matches stream", err) != nil {
		return rep, err
	}
	bar = newProgress(stderr, "restore", sf.StreamSize())
	_, err = raftstore.VerifyStream(bar.Reader(sf.Stream()))
	bar.Finish()
	if rep.record("record order and state invariants (full restore in memory)", err) != nil {
		return rep, err
	}
	rep.Valid = true
	return rep, nil
}

func printInspect(w io.Writer, rep *inspectReport) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintf(tw, "File\t%s\n", rep.File)
	fmt.Fprintf(tw, "Size\t%s (%d bytes)\n", humanBytes(rep.Bytes), rep.Bytes)
	if m := rep.Meta; m != nil {
		fmt.Fprintf(tw, "Taken by\t%s\n", m.NodeID)
		fmt.Fprintf(tw, "Taken at\t%s\n", m.TakenAt.UTC().Format(time.RFC3339))
		fmt.Fprintf(tw, "Index\t%d\n", m.Index)
		fmt.Fprintf(tw, "Term\t%d\n", m.Term)
		fmt.Fprintf(tw, "Servers\t%s\n", serversString(m.Servers))
		fmt.Fprintf(tw, "SHA-256\t%s\n", rep.SHA256)
	}
	if rep.FSMFormat != 0 {
		fmt.Fprintf(tw, "FSM snapshot\tformat %d, last command %d, %d records, body SHA-256 %s\n",
			rep.FSMFormat, rep.FSMApplied, rep.FSMRecords, rep.FSMChecksum)
	}
	if len(rep.Counts) > 0 {
		fmt.Fprintln(tw, "\nTYPE\tCOUNT")
		types := make([]string, 0, len(rep.Counts))
		for t := range rep.Counts {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			fmt.Fprintf(tw, "%s\t%d\n", t, rep.Counts[t])
		}
	}
	fmt.Fprintln(tw, "\nCHECK\tRESULT")
	for _, c := range rep.Checks {
		res := "ok"
		if !c.OK {
			res = "FAILED: " + c.Error
		}
		fmt.Fprintf(tw, "%s\t%s\n", c.Name, res)
	}
}

func serversString(servers []raftstore.Server) string {
	var parts []string
	for _, s := range servers {
		parts = append(parts, fmt.Sprintf("%s@%s (%s)", s.ID, s.Address, s.Suffrage))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func newSnapshotDiffCmd() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two snapshot files record by record",
		Long: `Compare two snapshot files record by record and print every record that
differs: ~ in both but different, - only in A, + only in B, each followed by
the records as JSON. Save a snapshot from each member (snapshot save --addr)
when their state hashes differ (metad status --hash), and this says where they
differ. Exits 0 when the states are the same, 1 when they differ or a file
does not verify. Offline: reads only the files.`,
		Example: `  metad snapshot save n1.snap --addr 10.0.0.1:7420
  metad snapshot save n2.snap --addr 10.0.0.2:7420
  metad snapshot diff n1.snap n2.snap`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usageError{fmt.Errorf("--limit %d: want 0 or more", limit)}
			}
			return diffSnapshotFiles(cmd.OutOrStdout(), args[0], args[1], limit)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "print at most this many differing records (0: count them only)")
	return cmd
}

// diffSnapshotFiles prints the differences between two snapshot files and
// returns an error if there are any.
func diffSnapshotFiles(w io.Writer, pathA, pathB string, limit int) error {
	var files [2]*raftstore.File
	for i, path := range []string{pathA, pathB} {
		f, sf, err := openSnapshotFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer f.Close()
		if err := verifySnapshot(f, sf, nil); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		files[i] = sf
	}
	for i, path := range []string{pathA, pathB} {
		m := files[i].Meta
		fmt.Fprintf(w, "%c: %s: node %s, index %d, taken %s\n", 'A'+i, path, m.NodeID, m.Index, m.TakenAt.Format(time.RFC3339))
	}
	differ := 0
	a, b, err := raftstore.DiffStreams(files[0].Stream(), files[1].Stream(), func(d fsm.RecordDiff) error {
		differ++
		if differ <= limit {
			fmt.Fprintln(w, d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if differ > limit {
		fmt.Fprintf(w, "(%d more not shown; raise --limit)\n", differ-limit)
	}
	// The full state hash, in hex, as metad status --hash prints it.
	sizes := fmt.Sprintf("A: %d records, hash %x; B: %d records, hash %x",
		a.FSM.Records, a.FSM.Checksum[:], b.FSM.Records, b.FSM.Checksum[:])
	if differ == 0 {
		fmt.Fprintf(w, "the states are the same (%s)\n", sizes)
		return nil
	}
	return fmt.Errorf("the states differ in %d records (%s)", differ, sizes)
}

func newSnapshotRestoreCmd() *cobra.Command {
	var (
		dataDir, nodeID, raftAddr, output string
		servers                           []string
		keepIdentity                      bool
		s3                                objectstore.S3Config
	)
	cmd := &cobra.Command{
		Use:   "restore FILE|URL",
		Short: "Restore a snapshot file into the data dir of a new server (offline)",
		Long: `Restore a snapshot file into the data dir of a new server, which must not
have Raft state yet. The file is a path, file:///PATH, or an object
s3://BUCKET/[PREFIX/]KEY (a scheduled backup: metad snapshot list --from
s3://BUCKET/PREFIX names them), read with the --s3-* settings and the AWS
SDK's credentials; then start the server on that data dir. The new cluster
is this server (--node-id at --raft-addr) plus every --server ID=RAFT_ADDR: run
the same restore, with the same file and the same servers, on each of them
before starting any. With no --server it is a cluster of one.

--raft-addr is the Raft address the other servers reach this one at: the
--raft-advertise (or --raft-addr) the server will be started with. The file is
verified completely before anything is kept. The restored cluster keeps the
snapshot's Raft index (metadata versions keep growing) and starts at term 1.

The restored cluster is a new cluster: the source's cluster id and its
tombstones (servers removed by remove-peer) are dropped, and its first leader
gives it a new id, so its nodes and the source's refuse each other.
--keep-identity keeps both, to bring back the same cluster after it is lost
for good (disaster recovery); never start it while a server of the source
still runs.

A snapshot is metadata only: start the servers on the object store the source
cluster used (--object-dir, or the same bucket), and never run two clusters,
each with its own GC, on one store.`,
		Example: `  # one server
  metad snapshot restore backup.snap --data-dir /var/lib/metad --node-id n1 --raft-addr 10.0.0.1:7421
  metad server --data-dir /var/lib/metad --raft-addr 10.0.0.1:7421 ...

  # three servers: the same command on each, with its own id and address
  metad snapshot restore backup.snap --data-dir /var/lib/metad --node-id n1 --raft-addr 10.0.0.1:7421 \
      --server n2=10.0.0.2:7421 --server n3=10.0.0.3:7421`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return usageError{fmt.Errorf("--output %q: want table or json", output)}
			}
			if strings.HasPrefix(args[0], "s3://") {
				if _, _, err := backup.SplitObjectURL(args[0]); err != nil {
					return usageError{err}
				}
			}
			// The arguments are checked before anything is read or
			// written: a refused restore leaves the data dir as it was.
			id, err := node.ChooseNodeID(dataDir, nodeID)
			if err != nil {
				return usageError{err}
			}
			all, err := parseServers(append([]string{id + "=" + raftAddr}, servers...))
			if err != nil {
				return usageError{err}
			}
			if err := raftstore.CheckServers(all); err != nil {
				return usageError{fmt.Errorf("the new cluster (--node-id %s at --raft-addr %s, and each --server): %w", id, raftAddr, err)}
			}
			file, release, err := backup.Fetch(cmd.Context(), args[0], s3)
			if err != nil {
				return err
			}
			defer release()
			if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
				return notFoundError{fmt.Errorf("snapshot file %s does not exist", args[0])} // as inspect says
			}
			res, err := restoreSnapshot(file, dataDir, id, all, raftstore.RestoreOptions{KeepIdentity: keepIdentity}, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			res.NodeID = id
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s into %s at index %d; servers %s\nstart it with: metad server --data-dir %s --node-id %s --raft-addr %s ...\n",
				args[0], dataDir, res.Index, serversString(all), dataDir, id, raftAddr)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", node.DefaultDataDir, "data dir of the new server (no Raft state yet)")
	cmd.Flags().StringVar(&nodeID, "node-id", "", "the new server's id (default: stored in the data dir, or generated)")
	cmd.Flags().StringVar(&raftAddr, "raft-addr", node.DefaultRaftAddr, "the Raft address other servers reach this one at")
	cmd.Flags().StringArrayVar(&servers, "server", nil, "ID=RAFT_ADDR of another voter of the new cluster (repeatable)")
	cliflags.RegisterS3(cmd.Flags(), &s3)
	cmd.Flags().BoolVar(&keepIdentity, "keep-identity", false, "keep the source's cluster id and tombstones: recover the same cluster (only once the source is gone for good); without it the restored cluster is a new one, with a new id")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

type restoreResult struct {
	NodeID  string             `json:"node_id"`
	Index   uint64             `json:"index"`
	Servers []raftstore.Server `json:"servers"`
}

// restoreSnapshot verifies the file completely before it claims the data
// dir (its LOCK and node id): a restore refused for its file writes
// nothing, so the corrected command, with any --node-id, runs on the same
// dir.
func restoreSnapshot(path, dataDir, nodeID string, servers []raftstore.Server, opts raftstore.RestoreOptions, stderr io.Writer) (*restoreResult, error) {
	f, sf, err := openSnapshotFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bar := newProgress(stderr, "verify", sf.VerifySize())
	err = verifySnapshot(f, sf, bar.Reader)
	bar.Finish()
	if err != nil {
		return nil, err
	}
	if err := holdDataDir(dataDir); err != nil {
		return nil, err
	}
	if err := node.StoreNodeID(dataDir, nodeID); err != nil {
		return nil, err
	}
	bar = newProgress(stderr, "restore", sf.StreamSize())
	index, err := raftstore.RestoreDir(node.RaftDir(dataDir), servers, bar.Reader(sf.Stream()), opts, nil)
	bar.Finish()
	if err != nil {
		return nil, err
	}
	return &restoreResult{Index: index, Servers: servers}, nil
}

// parseServers parses ID=ADDR[,nonvoter] specs into voters (or
// non-voters).
func parseServers(specs []string) ([]raftstore.Server, error) {
	var out []raftstore.Server
	for _, spec := range specs {
		id, rest, ok := strings.Cut(spec, "=")
		if !ok || id == "" || rest == "" {
			return nil, fmt.Errorf("server %q: want ID=RAFT_ADDR", spec)
		}
		s := raftstore.Server{ID: id, Address: rest, Suffrage: raftstore.Voter}
		if addr, kind, ok := strings.Cut(rest, ","); ok {
			if kind != "nonvoter" {
				return nil, fmt.Errorf("server %q: only ',nonvoter' may follow the address", spec)
			}
			s.Address, s.Suffrage = addr, raftstore.Nonvoter
		}
		out = append(out, s)
	}
	return out, nil
}

func newSnapshotListCmd() *cobra.Command {
	var (
		from, output string
		s3           objectstore.S3Config
	)
	cmd := &cobra.Command{
		Use:   "list --from URL",
		Short: "List the scheduled backups a directory or an s3:// prefix holds",
		Long: `List the scheduled backups (metad server --backup-to) that URL holds: a
directory (file:///DIR or DIR) or s3://BUCKET[/PREFIX], read with the --s3-*
settings. Each backup's name gives its cluster id, the time it was taken
(UTC) and its Raft index; within a cluster the list is oldest first. Restore
one with metad snapshot restore DIR/NAME or s3://BUCKET/PREFIX/NAME.`,
		Example: `  metad snapshot list --from /backups/metad
  metad snapshot list --from s3://backups/metad --s3-endpoint http://127.0.0.1:8333 --s3-path-style`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return usageError{fmt.Errorf("--output %q: want table or json", output)}
			}
			if from == "" {
				return usageError{errors.New("--from: required; want file:///DIR, DIR or s3://BUCKET[/PREFIX]")}
			}
			if _, _, err := backup.ParseURL(from); err != nil {
				return usageError{fmt.Errorf("--from: %w", err)}
			}
			entries, err := backup.List(cmd.Context(), "--from", from, s3)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), entries)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			defer tw.Flush()
			fmt.Fprintln(tw, "NAME\tCLUSTER\tTAKEN\tINDEX")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", e.Name, e.ClusterID, e.Time.Format(time.RFC3339Nano), e.Index)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the backups' directory (file:///DIR or DIR) or s3://BUCKET[/PREFIX]")
	cliflags.RegisterS3(cmd.Flags(), &s3)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}
