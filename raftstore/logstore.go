package raftstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// LogStore names where raft's log lives (Config.LogStore). The stable store
// (current term, vote) is raft-boltdb's raft.db either way.
type LogStore string

// The log stores a data dir can hold.
const (
	// LogStoreBolt keeps the log in raft.db with the stable store: two
	// fsyncs per write (bbolt's data pages, then its meta page).
	LogStoreBolt LogStore = "bolt"
	// LogStoreWAL keeps the log in hashicorp/raft-wal segment files under
	// wal/: one fsync per write (an append to the tail segment).
	LogStoreWAL LogStore = "wal"
	// LogStoreAuto, as Config.LogStore, opens the log store the data dir
	// holds and starts a new dir on LogStoreWAL. A dir only ever holds
	// bolt or wal; auto is never recorded.
	LogStoreAuto LogStore = "auto"
)

// LogStores lists the valid values of Config.LogStore.
var LogStores = []LogStore{LogStoreAuto, LogStoreBolt, LogStoreWAL}

// Valid reports whether l is one of LogStores.
func (l LogStore) Valid() bool { return slices.Contains(LogStores, l) }

// refuses reports whether a dir holding has must not be opened with l
// configured: both name a log store, and not the same one. Empty has is a
// dir with no log yet; an empty l (offline tools) and auto take what the
// dir holds.
func (l LogStore) refuses(has LogStore) bool {
	return has != "" && l != "" && l != LogStoreAuto && has != l
}

// newDirLogStore is what auto starts a new data dir on: raft-wal, one
// fsync per write instead of bbolt's two (PERFORMANCE.md "Raft log stores").
const newDirLogStore = LogStoreWAL

// ErrLogStoreMismatch: the data dir holds a raft log in another log store
// than the one configured. It is never converted in place (see
// LogStoreMismatchError).
var ErrLogStoreMismatch = errors.New("raftstore: the data dir holds its raft log in another log store")

// LogStoreMismatchError says which log store the data dir holds and which
// one was asked for; it matches ErrLogStoreMismatch. Converting a log in
// place would be a new way to lose entries, and a node never needs it: a
// node started on an empty data dir rejoins as a new incarnation and
// receives the state by snapshot and log from the leader, in the log store
// it was started with.
type LogStoreMismatchError struct {
	Dir        string
	Has, Wants LogStore
}

func (e *LogStoreMismatchError) Error() string {
	return fmt.Sprintf("raftstore: raft data dir %s holds a %s raft log, not %s: keep the log store %s, or wipe this node's data dir and let it rejoin as a new incarnation",
		e.Dir, e.Has, e.Wants, e.Has)
}

// Is makes errors.Is(err, ErrLogStoreMismatch) true.
func (e *LogStoreMismatchError) Is(target error) bool { return target == ErrLogStoreMismatch }

// keyLogStore is the stable-store key recording the dir's log store. Dirs
// written before it existed have no key and a bolt log.
var keyLogStore = []byte("MetadLogStore")

// keyNodeID is the stable-store key recording the node id the raft state
// belongs to; dirs written before it existed record it on their next open.
var keyNodeID = []byte("MetadNodeID")

// ErrNodeIDMismatch: the raft state in the data dir belongs to another
// node id than the one the node starts with.
var ErrNodeIDMismatch = errors.New("raftstore: the raft state belongs to another node id")

// checkNodeID records id in a dir that records none, and refuses a dir
// that records another: a node-id file that was damaged (a flipped byte
// that still reads as an id), or another node's data dir, would make the
// node a stranger to its own cluster, or two nodes one.
func (d *disk) checkNodeID(id string) error {
	got, err := d.raftStable.Get(keyNodeID)
	switch {
	case err != nil && !missingKey(err):
		return fmt.Errorf("raftstore: stable store %s: %w", keyNodeID, err)
	case len(got) == 0:
		if err := d.raftStable.Set(keyNodeID, []byte(id)); err != nil {
			return fmt.Errorf("raftstore: record node id: %w", err)
		}
		return nil
	case string(got) != id:
		return fmt.Errorf("%w: %s holds the raft state of node %q, and this node starts as %q: "+
			"if the data dir's node-id file was damaged, write %q back into it; if the data dir is another node's, use this node's own",
			ErrNodeIDMismatch, filepath.Join(d.dir, "raft.db"), got, id, got)
	}
	return nil
}

// walDir is where a wal log lives, under the raft data dir.
const walDir = "wal"

// disk is a raft data dir's stores, open: the stable store (always bolt)
// and the log store (the same bolt store, or a WAL).
type disk struct {
	dir    string
	kind   LogStore
	stable *raftboltdb.BoltStore
	log    raft.LogStore // stable itself, or wal, behind failure
	wal    *wal.WAL      // nil for bolt
	// failure latches the first failed write of either store (durable.go);
	// raft writes the stable store through raftStable, which checks what it
	// reads back (stablecheck.go).
	failure    *diskFailure
	raftStable raft.StableStore
	// walMeta is the WAL's meta store, closed after it.
	walMeta *metadb.BoltMetaDB
}

// diskOptions say how to open a data dir's stores.
type diskOptions struct {
	// want is the configured log store; empty (offline tools) opens what
	// the dir holds, bolt for a dir that records nothing; auto opens what
	// the dir holds, newDirLogStore for a dir that holds no log yet.
	want LogStore
	// create allows a missing raft.db to be created.
	create bool
	// record writes want into a dir that records no log store and holds no
	// log entries yet (a new node, or one written before the record).
	record bool
	hlog   hclog.Logger
}

// openDisk opens dir's stable store, checks the log store it holds against
// o.want, and opens the log store. A second process on the dir fails with
// ErrDirInUse within a second (bolt's flock), before the WAL, whose own
// bolt file would wait forever, is touched.
func openDisk(dir string, o diskOptions) (*disk, error) {
	stable, err := openStable(dir, o.create)
	if err != nil {
		return nil, err
	}
	d := &disk{dir: dir, stable: stable, failure: newDiskFailure()}
	if err := d.openLog(o); err != nil {
		stable.Close()
		return nil, err
	}
	path := filepath.Join(dir, "raft.db")
	d.raftStable = &checkedStable{inner: &durableStable{StableStore: stable, f: d.failure, path: path}, path: path, f: d.failure}
	return d, nil
}

// openStable opens dir's raft.db; create false requires it to exist.
func openStable(dir string, create bool) (*raftboltdb.BoltStore, error) {
	path := filepath.Join(dir, "raft.db")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !create {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoState, path)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("raftstore: data dir: %w", err)
	}
	stable, err := raftboltdb.New(raftboltdb.Options{
		Path: path,
		// NoFreelistSync: the freelist is rebuilt on open instead of written
		// on every commit, which halves write amplification of the log.
		// Timeout: a second process on the same dir fails instead of hanging.
		BoltOptions: &bbolt.Options{NoFreelistSync: true, Timeout: time.Second},
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is locked", ErrDirInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: open stable store: %w", err)
	}
	return stable, nil
}

func (d *disk) openLog(o diskOptions) error {
	kind, err := d.decideKind(o)
	if err != nil {
		return err
	}
	d.kind = kind
	if kind == LogStoreBolt {
		d.log = &durableLog{LogStore: d.stable, f: d.failure, path: filepath.Join(d.dir, "raft.db")}
		return nil
	}
	if o.hlog == nil {
		o.hlog = hclog.NewNullLogger()
	}
	wdir := filepath.Join(d.dir, walDir)
	if err := d.checkWALPresent(wdir); err != nil {
		return err
	}
	if err := os.MkdirAll(wdir, 0o750); err != nil {
		return fmt.Errorf("raftstore: wal dir: %w", err)
	}
	// The meta store (a bolt file) is closed here after the WAL too: v0.4.0's
	// Close left it open, and a second open in the same process (node's
	// HasStateIn, then Open) waited forever for its lock. Closing it twice
	// is harmless.
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(wdir, wal.WithLogger(o.hlog.Named("wal")), wal.WithMetaStore(meta),
		wal.WithMetricsCollector(walMetrics{}))
	if err != nil {
		meta.Close()
		return fmt.Errorf("raftstore: open wal log store: %w", err)
	}
	d.wal, d.walMeta, d.log = w, meta, &durableLog{LogStore: w, f: d.failure, path: wdir}
	return nil
}

// walMetrics sends raft-wal's metrics where raft's go: to go-metrics'
// global sink (bridged to /metrics by node), as raft_wal_log_appends,
// raft_wal_log_entry_bytes_written and so on. raft-wal's own
// GoMetricsCollector would hold the global that exists when the WAL opens,
// before node installs its sink, and report nowhere.
type walMetrics struct{}

func (walMetrics) IncrementCounter(name string, delta uint64) {
	gometrics.IncrCounter([]string{"raft", "wal", name}, float32(delta))
}

func (walMetrics) SetGauge(name string, val uint64) {
	gometrics.SetGauge([]string{"raft", "wal", name}, float32(val))
}

// ErrLogMissing: the stable store says this node has voted or been in a
// term, but the WAL it records is gone. Opening an empty log under the old
// term would let the node vote as if it had never acknowledged anything.
var ErrLogMissing = errors.New("raftstore: the data dir's raft log is missing")

// checkWALPresent refuses a dir whose stable store holds a term while its
// WAL meta file is gone (deleted by hand, or a partial restore), rather
// than let wal.Open start an empty log under that term. A dir recorded as
// wal but never in a term (a crash between the record and the first
// write) opens as new.
func (d *disk) checkWALPresent(wdir string) error {
	meta := filepath.Join(wdir, "wal-meta.db")
	if _, err := os.Stat(meta); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	term, err := d.stable.GetUint64(keyCurrentTerm)
	if err != nil && !missingKey(err) {
		return fmt.Errorf("raftstore: stable store: %w", err)
	}
	if term > 0 {
		return fmt.Errorf("%w: %s holds term %d but %s does not exist; wipe the whole data dir and let the node rejoin as a new incarnation",
			ErrLogMissing, filepath.Join(d.dir, "raft.db"), term, meta)
	}
	return nil
}

// decideKind returns the log store to open: the one the dir holds, which
// must be o.want if o.want names one; for a dir that holds none yet, o.want
// (newDirLogStore for auto; recorded if o.record), or bolt if o.want is
// empty.
func (d *disk) decideKind(o diskOptions) (LogStore, error) {
	has, err := heldLogStore(d.stable)
	switch {
	case err != nil:
		return "", err
	case o.want.refuses(has):
		return "", &LogStoreMismatchError{Dir: d.dir, Has: has, Wants: o.want}
	case has != "":
		return has, nil
	case o.want == "":
		return LogStoreBolt, nil
	case o.want == LogStoreAuto:
		o.want = newDirLogStore
	}
	if o.record {
		if err := d.stable.Set(keyLogStore, []byte(o.want)); err != nil {
			return "", fmt.Errorf("raftstore: record log store: %w", err)
		}
	}
	return o.want, nil
}

// heldLogStore is the log store a dir's stable store records; for a dir
// without a record, bolt if raft.db holds log entries (a dir written before
// the record existed), else "" (no log yet: any log store will do).
func heldLogStore(stable *raftboltdb.BoltStore) (LogStore, error) {
	recorded, err := stable.Get(keyLogStore)
	if err != nil && !missingKey(err) {
		return "", fmt.Errorf("raftstore: stable store %s: %w", keyLogStore, err)
	}
	if has := LogStore(recorded); has != "" {
		if !has.Valid() {
			return "", fmt.Errorf("raftstore: stable store records log store %q, which this binary does not know", has)
		}
		return has, nil
	}
	last, err := stable.LastIndex()
	if err != nil {
		return "", fmt.Errorf("raftstore: log: %w", err)
	}
	if last > 0 {
		return LogStoreBolt, nil
	}
	return "", nil
}

// close closes the log store, then the stable store.
func (d *disk) close() error {
	var errs []error
	if d.wal != nil {
		errs = append(errs, d.wal.Close(), d.walMeta.Close())
	}
	errs = append(errs, d.stable.Close())
	return errors.Join(errs...)
}

// DirLogStore reports the log store a stopped node's raft directory holds:
// the recorded one, else bolt if its raft.db holds log entries, else ""
// (a new dir, which takes whatever it is first opened with). A dir without
// raft.db is ErrNoState; one a running server holds, ErrDirInUse.
func DirLogStore(dir string) (LogStore, error) {
	stable, err := openStable(dir, false)
	if err != nil {
		return "", err
	}
	defer stable.Close()
	return heldLogStore(stable)
}

// CheckLogStore reports a LogStoreMismatchError if the raft directory dir
// holds a log in another log store than want; a dir without raft state
// passes. It opens and closes the stores, so call it before Open, not on a
// dir a server is running on.
func CheckLogStore(dir string, want LogStore) error {
	has, err := DirLogStore(dir)
	switch {
	case errors.Is(err, ErrNoState):
		return nil
	case err != nil:
		return err
	case want.refuses(has):
		return &LogStoreMismatchError{Dir: dir, Has: has, Wants: want}
	}
	return nil
}
