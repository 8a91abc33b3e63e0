package raftstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/statestore"
)

// Offline operations work on the raft directory of a stopped node (the
// layout in doc.go), never on a running one: the bolt file is locked by a
// running server, and they fail with ErrDirInUse instead of waiting.
var (
	// ErrDirInUse: another process (a running server) holds the data dir.
	ErrDirInUse = errors.New("raftstore: raft data dir is in use (is a server running on it?)")
	// ErrNoState: the dir has no raft state to inspect or recover.
	ErrNoState = errors.New("raftstore: no raft state in the data dir")
	// ErrHasState: a restore needs a new, empty data dir.
	ErrHasState = errors.New("raftstore: the data dir already has raft state")
	// ErrBadServers: a configuration given to RecoverDir or RestoreDir is
	// not a valid raft configuration.
	ErrBadServers = errors.New("raftstore: invalid server list")
)

// Raft's stable-store keys (unexported in hashicorp/raft v1.7.3).
var (
	keyCurrentTerm  = []byte("CurrentTerm")
	keyLastVoteTerm = []byte("LastVoteTerm")
	keyLastVoteCand = []byte("LastVoteCand")
)

// offlineStores are a stopped node's raft stores, opened for an offline
// operation.
type offlineStores struct {
	dir   string
	disk  *disk
	snaps raft.SnapshotStore
	hlog  *hclogAdapter
	// state is the state store's adapter, opened when a point snapshot is
	// (stateSnapshots streams the store's state in its place).
	state *fsmAdapter
}

// openOffline opens dir's stores. create false requires raft.db to exist.
func openOffline(dir string, create bool, logger *slog.Logger) (*offlineStores, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	hlog := newHCLogger(logger, "raft").(*hclogAdapter)
	d, err := openDisk(dir, diskOptions{create: create, hlog: hlog})
	if err != nil {
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, DefaultConfig().SnapshotRetain, hlog.Named("snapshot"))
	if err != nil {
		d.close()
		return nil, fmt.Errorf("raftstore: snapshot store: %w", err)
	}
	o := &offlineStores{dir: dir, disk: d, hlog: hlog}
	o.snaps = &stateSnapshots{SnapshotStore: snaps, stream: o.streamState}
	return o, nil
}

// streamState streams the state store's state, for a point snapshot.
func (o *offlineStores) streamState() (io.ReadCloser, int64, error) {
	if o.state == nil {
		dir := filepath.Join(o.dir, stateDirName)
		cfg := stateStoreConfig(DefaultStateCacheBytes, nil)
		st, err := statestore.Open(dir, cfg)
		if err != nil {
			return nil, 0, &StateError{Dir: dir, Err: err}
		}
		a, err := newDiskAdapter(slog.New(slog.DiscardHandler), st, dir, cfg, func(error) {})
		if err != nil {
			st.Close()
			return nil, 0, err
		}
		o.state = a
	}
	return o.state.streamState()
}

func (o *offlineStores) close() error {
	var errs []error
	if o.state != nil {
		errs = append(errs, o.state.close())
	}
	return errors.Join(append(errs, o.disk.close())...)
}

// DirInfo describes a stopped node's raft state.
type DirInfo struct {
	// CurrentTerm, LastVoteTerm and LastVoteFor are raft's stable store.
	CurrentTerm  uint64 `json:"current_term"`
	LastVoteTerm uint64 `json:"last_vote_term"`
	LastVoteFor  string `json:"last_vote_for"`
	// LogStore is where the log lives (bolt or wal).
	LogStore LogStore `json:"log_store"`
	// FirstIndex and LastIndex bound the log (0 when empty); LastTerm is the
	// term of the last entry, or of the newest snapshot if the log is empty.
	FirstIndex uint64 `json:"first_index"`
	LastIndex  uint64 `json:"last_index"`
	LastTerm   uint64 `json:"last_term"`
	// Snapshots are raft's snapshots, newest first.
	Snapshots []SnapshotInfo `json:"snapshots"`
	// Servers is the latest configuration in the log or newest snapshot,
	// committed or not, as raft would start with; ConfigIndex its index.
	Servers     []Server `json:"servers"`
	ConfigIndex uint64   `json:"config_index"`
	// State is the state after replaying the newest snapshot and every log
	// entry after it (InspectDir with replay), else nil.
	State *StateInfo `json:"state,omitempty"`
}

// ErrIndexUnavailable: a replay was asked for an index outside what the
// data dir can rebuild (DirInfo.ReplayRange).
var ErrIndexUnavailable = errors.New("raftstore: the data dir cannot rebuild the state at that index")

// ReplayRange is the indices ReplayDirTo can rebuild the state at: from
// the newest snapshot's index (0 without a snapshot: the empty state) to
// the highest the log or the snapshot reaches. Below the newest snapshot
// the log is compacted away; above the last entry there is nothing.
func (d DirInfo) ReplayRange() (lo, hi uint64) {
	hi = d.LastIndex
	if len(d.Snapshots) > 0 {
		// A point snapshot's state is the state store's, which may be
		// past the point: its stream header says where.
		lo = max(d.Snapshots[0].Index, d.Snapshots[0].StreamHeader)
		hi = max(hi, lo)
	}
	return lo, hi
}

// SnapshotInfo describes one of raft's snapshots.
type SnapshotInfo struct {
	ID           string   `json:"id"`
	Index        uint64   `json:"index"`
	Term         uint64   `json:"term"`
	Size         int64    `json:"size"`
	Servers      []Server `json:"servers"`
	StreamHeader uint64   `json:"stream_index"` // the index in the snapshot stream's header
}

// StateInfo is the state machine a replay produced.
type StateInfo struct {
	// AppliedIndex is the last log index the replay reached; LastCommand
	// the index of the last command that changed the state.
	AppliedIndex uint64 `json:"applied_index"`
	LastCommand  uint64 `json:"last_command"`
	// Hash is the state hash (`metad status --hash` shows the same), HashHex
	// the same in hex.
	Hash    [32]byte `json:"-"`
	HashHex string   `json:"hash"`
	// Counts are the state's records by type, as in a snapshot.
	Counts map[string]uint64 `json:"counts"`
}

// InspectDir describes the raft state in dir (a stopped node's raft
// directory). With replay it also rebuilds the state machine from the
// newest snapshot and the log, applying every entry in the log, committed
// or not: the state this node would serve if its whole log were committed.
func InspectDir(dir string, replay bool) (DirInfo, error) {
	o, err := openOffline(dir, false, nil)
	if err != nil {
		return DirInfo{}, err
	}
	defer o.close()
	info := DirInfo{LogStore: o.disk.kind}
	if err := o.readStable(&info); err != nil {
		return info, err
	}
	if err := o.readLog(&info); err != nil {
		return info, err
	}
	if err := o.readSnapshots(&info); err != nil {
		return info, err
	}
	if info.LastIndex == 0 && len(info.Snapshots) > 0 {
		info.LastTerm = info.Snapshots[0].Term
	}
	if err := o.readConfiguration(&info); err != nil {
		return info, err
	}
	if replay {
		st, err := o.replay(&info)
		if err != nil {
			return info, err
		}
		info.State = st
	}
	return info, nil
}

func (o *offlineStores) readStable(info *DirInfo) error {
	var err error
	if info.CurrentTerm, err = getUint64(o.disk.stable, keyCurrentTerm); err != nil {
		return err
	}
	if info.LastVoteTerm, err = getUint64(o.disk.stable, keyLastVoteTerm); err != nil {
		return err
	}
	cand, err := o.disk.stable.Get(keyLastVoteCand)
	if err != nil && !missingKey(err) {
		return fmt.Errorf("raftstore: stable store: %w", err)
	}
	info.LastVoteFor = string(cand)
	return nil
}

// missingKey reports whether a stable-store read failed only because the
// key is absent. The stable store is always raft-boltdb's, whose
// ErrKeyNotFound says so (raft itself compares the text "not found", as it
// knows no store's sentinel; that text is ErrKeyNotFound's).
func missingKey(err error) bool { return errors.Is(err, raftboltdb.ErrKeyNotFound) }

// getUint64 reads a stable-store key; a missing key reads as 0.
func getUint64(b *raftboltdb.BoltStore, key []byte) (uint64, error) {
	v, err := b.GetUint64(key)
	if err != nil && !missingKey(err) {
		return 0, fmt.Errorf("raftstore: stable store %s: %w", key, err)
	}
	return v, nil
}

func (o *offlineStores) readLog(info *DirInfo) error {
	var err error
	if info.FirstIndex, err = o.disk.log.FirstIndex(); err != nil {
		return fmt.Errorf("raftstore: log: %w", err)
	}
	if info.LastIndex, err = o.disk.log.LastIndex(); err != nil {
		return fmt.Errorf("raftstore: log: %w", err)
	}
	if info.LastIndex > 0 {
		var l raft.Log
		if err := o.disk.log.GetLog(info.LastIndex, &l); err != nil {
			return fmt.Errorf("raftstore: log entry %d: %w", info.LastIndex, err)
		}
		info.LastTerm = l.Term
	}
	return nil
}

// LogEntry summarises one raft log entry, to compare the logs of nodes.
type LogEntry struct {
	Index, Term uint64
	// Kind is the raft entry type, or for a command its operation (e.g.
	// "CommitAppend"), or "Barrier".
	Kind string
	// Digest is the start of the SHA-256 of the entry's data and extensions:
	// equal digests, equal entries.
	Digest [8]byte
}

func (e LogEntry) String() string {
	return fmt.Sprintf("index %d term %d %s %x", e.Index, e.Term, e.Kind, e.Digest)
}

// ReadLog calls fn for every entry of the log in dir (a stopped node's raft
// directory) from index from to index to (0: the log's first and last), in
// index order, stopping at fn's first error.
func ReadLog(dir string, from, to uint64, fn func(LogEntry) error) error {
	o, err := openOffline(dir, false, nil)
	if err != nil {
		return err
	}
	defer o.close()
	var info DirInfo
	if err := o.readLog(&info); err != nil {
		return err
	}
	last := info.LastIndex
	if to != 0 {
		last = min(last, to)
	}
	for i := max(info.FirstIndex, from); i <= last && i > 0; i++ {
		var l raft.Log
		if err := o.disk.log.GetLog(i, &l); err != nil {
			return fmt.Errorf("raftstore: log entry %d: %w", i, err)
		}
		h := sha256.New()
		h.Write(l.Data)
		h.Write(l.Extensions)
		e := LogEntry{Index: l.Index, Term: l.Term, Kind: l.Type.String()}
		copy(e.Digest[:], h.Sum(nil))
		switch {
		case isBarrier(&l):
			e.Kind = "Barrier"
		case l.Type == raft.LogCommand:
			if cmd, err := fsm.DecodeCommand(l.Data); err == nil {
				e.Kind = strings.TrimPrefix(fmt.Sprintf("%T", cmd.Op), "*fsmpb.Command_")
			}
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func (o *offlineStores) readSnapshots(info *DirInfo) error {
	metas, err := o.snaps.List()
	if err != nil {
		return fmt.Errorf("raftstore: snapshots: %w", err)
	}
	for _, m := range metas {
		si := SnapshotInfo{ID: m.ID, Index: m.Index, Term: m.Term, Size: m.Size, Servers: fromRaftServers(m.Configuration.Servers)}
		if _, rc, err := o.snaps.Open(m.ID); err == nil {
			si.StreamHeader, _ = readStreamHeader(rc)
			rc.Close()
		}
		info.Snapshots = append(info.Snapshots, si)
	}
	return nil
}

// readConfiguration finds the latest configuration: the last configuration
// entry in the log, else the newest snapshot's.
func (o *offlineStores) readConfiguration(info *DirInfo) error {
	for i := info.LastIndex; i >= info.FirstIndex && i > 0; i-- {
		var l raft.Log
		if err := o.disk.log.GetLog(i, &l); err != nil {
			return fmt.Errorf("raftstore: log entry %d: %w", i, err)
		}
		if l.Type == raft.LogConfiguration {
			conf, err := decodeConfiguration(l.Data)
			if err != nil {
				return fmt.Errorf("raftstore: configuration at %d: %w", i, err)
			}
			info.Servers, info.ConfigIndex = fromRaftServers(conf.Servers), i
			return nil
		}
	}
	if len(info.Snapshots) > 0 {
		info.Servers, info.ConfigIndex = info.Snapshots[0].Servers, info.Snapshots[0].Index
	}
	return nil
}

// decodeConfiguration is raft.DecodeConfiguration, which panics on bad
// bytes, with the panic turned into an error.
func decodeConfiguration(b []byte) (conf raft.Configuration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	return raft.DecodeConfiguration(b), nil
}

// replay restores the newest snapshot into a fresh state machine and
// applies every log entry after it, as raft would on start.
func (o *offlineStores) replay(info *DirInfo) (*StateInfo, error) {
	a, err := o.replayTo(info, info.LastIndex)
	if err != nil {
		return nil, err
	}
	return summarizeMachine(a)
}

// replayTo rebuilds the state machine from the newest snapshot and the log
// entries up to index upTo (or the snapshot's index, if that is later).
func (o *offlineStores) replayTo(info *DirInfo, upTo uint64) (*fsmAdapter, error) {
	a := newFSMAdapter(slog.New(slog.DiscardHandler))
	from := uint64(0)
	if len(info.Snapshots) > 0 {
		_, rc, err := o.snaps.Open(info.Snapshots[0].ID)
		if err != nil {
			return nil, fmt.Errorf("raftstore: open snapshot %s: %w", info.Snapshots[0].ID, err)
		}
		if err := a.Restore(rc); err != nil {
			return nil, fmt.Errorf("raftstore: snapshot %s: %w", info.Snapshots[0].ID, err)
		}
		// The state the snapshot streamed may be past its index (a point
		// snapshot streams the state store's state).
		from = a.appliedIndex()
	}
	for i := max(from+1, info.FirstIndex); i <= min(upTo, info.LastIndex) && i > 0; i++ {
		var l raft.Log
		if err := o.disk.log.GetLog(i, &l); err != nil {
			return nil, fmt.Errorf("raftstore: log entry %d: %w", i, err)
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			a.ApplyBatch([]*raft.Log{&l})
		}
		if err := a.stoppedErr(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// ReplayDirTo rebuilds the state of a stopped node's raft directory as of
// log index upTo (the newest snapshot, then every log entry up to upTo,
// committed or not) and writes it to w as a snapshot stream, the form
// DiffStreams compares. It returns the index the state reflects (upTo, or
// less if the log ends with entries the state machine never sees) and that
// entry's term; an upTo outside DirInfo.ReplayRange is refused
// (ErrIndexUnavailable), never answered with the state at another index. Compared with a snapshot the node served at
// upTo while it ran, it tells whether the live state was its log's.
func ReplayDirTo(dir string, upTo uint64, w io.Writer) (index, term uint64, err error) {
	o, err := openOffline(dir, false, nil)
	if err != nil {
		return 0, 0, err
	}
	defer o.close()
	var info DirInfo
	if err := o.readLog(&info); err != nil {
		return 0, 0, err
	}
	if err := o.readSnapshots(&info); err != nil {
		return 0, 0, err
	}
	if lo, hi := info.ReplayRange(); upTo < lo || upTo > hi {
		return 0, 0, fmt.Errorf("%w: index %d: it holds %d..%d", ErrIndexUnavailable, upTo, lo, hi)
	}
	a, err := o.replayTo(&info, upTo)
	if err != nil {
		return 0, 0, err
	}
	snap, _ := a.Snapshot()
	as := snap.(*adapterSnapshot)
	var l raft.Log
	switch {
	case as.through == 0:
	case o.disk.log.GetLog(as.through, &l) == nil:
		term = l.Term
	case len(info.Snapshots) > 0 && info.Snapshots[0].Index == as.through:
		term = info.Snapshots[0].Term
	}
	return as.through, term, as.write(w)
}

// summarizeMachine hashes the adapter's machine and counts its records.
func summarizeMachine(a *fsmAdapter) (*StateInfo, error) {
	snap, _ := a.Snapshot()
	as := snap.(*adapterSnapshot)
	sum, _, err := as.m.StateHash()
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- pw.CloseWithError(as.write(pw)) }()
	ss, err := SummarizeStream(pr)
	pr.CloseWithError(io.ErrClosedPipe)
	if werr := <-done; err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	return &StateInfo{AppliedIndex: as.through, LastCommand: as.m.AppliedIndex(), Hash: sum,
		HashHex: hex.EncodeToString(sum[:]), Counts: ss.Counts}, nil
}

// RecoverDir rewrites the raft configuration of a stopped node to servers,
// the way raft.RecoverCluster (and Consul's peers.json) do, so that a
// cluster that lost its quorum can be restarted from survivors: it
// restores the newest snapshot, applies every entry of the log (committed
// or not), writes a new snapshot carrying the new configuration, and
// empties the log. Run it on every server of the new configuration, with
// the same servers, before starting any of them. It returns the state it
// left.
func RecoverDir(dir string, servers []Server, logger *slog.Logger) (DirInfo, error) {
	conf, err := raftConfiguration(servers)
	if err != nil {
		return DirInfo{}, err
	}
	o, err := openOffline(dir, false, logger)
	if err != nil {
		return DirInfo{}, err
	}
	rc := DefaultConfig()
	rc.NodeID = servers[0].ID // raft.RecoverCluster wants a valid config; the id is unused
	_, trans := raft.NewInmemTransport("")
	err = raft.RecoverCluster(rc.raftConfig(o.hlog), newFSMAdapter(slog.New(slog.DiscardHandler)),
		o.disk.log, o.disk.stable, o.snaps, trans, conf)
	o.close()
	if err != nil {
		return DirInfo{}, fmt.Errorf("raftstore: recover: %w", err)
	}
	return InspectDir(dir, true)
}

// RestoreDir makes dir (a new node's raft directory, without state) start
// from a snapshot stream with the given configuration: the stream becomes
// raft's snapshot, at the index in its header. The stream is verified as a
// restore would (checksums, order, invariants) while it is copied; nothing
// is kept if it fails. Start every server of the configuration from the
// same stream. It returns the snapshot's index.
//
// The snapshot's term is 1 whatever the source's was: the restored cluster
// starts a history of its own (term 0 on disk, first election term 1), and
// raft needs its terms to grow along the log.
//
// Unless opts.KeepIdentity, the state restored is the stream's with its
// cluster id and tombstones dropped (fsm.Machine.ForgetIdentity): a new
// cluster, whose first leader gives it a new id.
func RestoreDir(dir string, servers []Server, stream io.Reader, opts RestoreOptions, logger *slog.Logger) (uint64, error) {
	conf, err := raftConfiguration(servers)
	if err != nil {
		return 0, err
	}
	o, err := openOffline(dir, true, logger)
	if err != nil {
		return 0, err
	}
	defer o.close()
	if has, err := raft.HasExistingState(o.disk.log, o.disk.stable, o.snaps); err != nil || has {
		return 0, fmt.Errorf("%w: %s (restore into a new, empty data dir)", ErrHasState, o.dir)
	}
	// A state store without raft state (a start that failed before raft
	// wrote anything) is not the restored cluster's: the snapshot rebuilds
	// it at start.
	if err := removeStateDir(o.dir); err != nil {
		return 0, fmt.Errorf("raftstore: remove stale state: %w", err)
	}
	index, err := readStreamHeader(stream)
	if err != nil {
		return 0, err
	}
	_, trans := raft.NewInmemTransport("")
	sink, err := o.snaps.Create(raft.SnapshotVersionMax, index, 1, conf, index, trans)
	if err != nil {
		return 0, fmt.Errorf("raftstore: create snapshot: %w", err)
	}
	if opts.KeepIdentity {
		err = copyVerified(sink, index, stream)
	} else {
		err = writeForgotten(sink, index, stream)
	}
	if err != nil {
		_ = sink.Cancel()
		return 0, err
	}
	if err := sink.Close(); err != nil {
		return 0, fmt.Errorf("raftstore: write snapshot: %w", err)
	}
	return index, nil
}

// RestoreOptions are the choices of RestoreDir.
type RestoreOptions struct {
	// KeepIdentity keeps the snapshot's cluster id and tombstones: the
	// restored servers are the same cluster as the source (disaster
	// recovery of a cluster that is gone, never alongside it). Default
	// false: a new cluster.
	KeepIdentity bool
}

// copyVerified copies the stream (its header already read) to w unchanged
// while restoring it in memory, which verifies it.
func copyVerified(w io.Writer, index uint64, stream io.Reader) error {
	hdr := streamHeader(index)
	copied := io.TeeReader(io.MultiReader(bytes.NewReader(hdr[:]), stream), w)
	if err := newFSMAdapter(slog.New(slog.DiscardHandler)).Restore(io.NopCloser(copied)); err != nil {
		return err
	}
	_, err := io.Copy(w, copied) // nothing, if Restore read to the end
	return err
}

// writeForgotten restores the stream (its header already read) in memory,
// drops its identity, and writes the result to w as a stream at index.
func writeForgotten(w io.Writer, index uint64, stream io.Reader) error {
	hdr := streamHeader(index)
	a := newFSMAdapter(slog.New(slog.DiscardHandler))
	if err := a.Restore(io.NopCloser(io.MultiReader(bytes.NewReader(hdr[:]), stream))); err != nil {
		return err
	}
	a.m.ForgetIdentity()
	snap := adapterSnapshot{m: a.m, through: index}
	return snap.write(w)
}

// CheckServers reports what RestoreDir and RecoverDir refuse in a server
// list (an id or address that does not parse, a duplicate, no voter),
// matching ErrBadServers, without touching a data dir: a command checks
// its arguments before it claims one.
func CheckServers(servers []Server) error {
	_, err := raftConfiguration(servers)
	return err
}

// raftConfiguration checks servers as raft would and converts them.
func raftConfiguration(servers []Server) (raft.Configuration, error) {
	var conf raft.Configuration
	ids, addrs, voters := map[string]bool{}, map[string]bool{}, 0
	var errs []error
	for _, s := range servers {
		suffrage, err := raftSuffrage(s.Suffrage)
		switch {
		case err != nil:
			errs = append(errs, err)
		case checkNodeID(s.ID) != nil:
			errs = append(errs, fmt.Errorf("server id %q: %w", s.ID, checkNodeID(s.ID)))
		case checkAdvertise(s.Address) != nil:
			errs = append(errs, fmt.Errorf("server %s address %q: %w", s.ID, s.Address, checkAdvertise(s.Address)))
		case ids[s.ID] || addrs[s.Address]:
			errs = append(errs, fmt.Errorf("server %s at %s: duplicate id or address", s.ID, s.Address))
		}
		ids[s.ID], addrs[s.Address] = true, true
		if err == nil && suffrage == raft.Voter {
			voters++
		}
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Address), Suffrage: suffrage})
	}
	if voters == 0 {
		errs = append(errs, errors.New("no voter"))
	}
	if len(errs) > 0 {
		return conf, fmt.Errorf("%w: %w", ErrBadServers, errors.Join(errs...))
	}
	return conf, nil
}

func fromRaftServers(in []raft.Server) []Server {
	out := make([]Server, 0, len(in))
	for _, s := range in {
		out = append(out, Server{ID: string(s.ID), Address: string(s.Address), Suffrage: suffrageOf(s.Suffrage)})
	}
	return out
}

// HasStateIn reports whether dir holds raft state, without starting raft
// (and without creating anything): node asks it before opening the store,
// to start gossip first, since opening restores the latest snapshot and
// may take minutes.
func HasStateIn(dir string) (bool, error) {
	o, err := openOffline(dir, false, nil)
	if errors.Is(err, ErrNoState) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer o.close()
	return raft.HasExistingState(o.disk.log, o.disk.stable, o.snaps)
}
