package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/internal/fsmtest"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/readpath"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/resolver"
)

// TestVersionsAndSlicesNeverLoseIntactOffsets is G8 and G10 as properties
// of the read path's parts together — the resolver, the repair loop, the
// server's checks of bytes (readpath.Objects) and a reader that checks
// every range it reads (objectstore.ReadRange, as client.Read does) — over
// a replicated state at feature level 3 and a versioned file store whose
// keys are re-uploaded (the same bytes, and other bytes that later appends
// name), whose versions vanish and come back, and whose slices are
// rewritten in place and restored. Every offset's bytes are a function of
// the offset, so a reader that returns bytes of another version, or bytes
// that fail their checksum, is caught; and no committed offset whose own
// version has been intact for one repair scan interval is ever
// unresolvable or unreadable. METAD_SEED=N replays a run.
func TestVersionsAndSlicesNeverLoseIntactOffsets(t *testing.T) {
	seed := propertySeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	w := newVersionWorld(t, rng.IntN(2) == 0)
	scan := repair.DefaultConfig().ScanInterval
	stop := w.runRepair()
	defer stop()
	for range 4 {
		w.appendObject(rng, "")
	}
	// minSteps random steps, then directed ones until the run has
	// exercised what it checks: a random byte flip is seldom read by a
	// reader before the repair scan finds it, so a run may end without a
	// confirmed CORRUPT report; a directed step makes one.
	step := 0
	for ; step < minSteps || (!w.provedEnough() && step < maxSteps); step++ {
		var offsets []uint64
		if step < minSteps || w.provedEnough() {
			w.mutate(t, rng, step)
		} else if o, ok := w.corruptTarget(t, rng); ok {
			offsets = append(offsets, o)
		}
		for len(offsets) < 2 {
			offsets = append(offsets, w.pickOffset(rng))
		}
		for _, offset := range offsets {
			got, rng2, err := w.read(offset)
			own := w.owner[offset]
			switch {
			case err == nil && !bytes.Equal(got, content(rng2)):
				t.Fatalf("step %d: offset %d read %d bytes of %v that are not its own (another version, or corrupt)", step, offset, len(got), rng2)
			case err == nil && (offset < rng2.Start || offset >= rng2.End):
				t.Fatalf("step %d: offset %d read a record of %v", step, offset, rng2)
			case err != nil && !errors.Is(err, resolver.ErrUnavailable) && !errors.Is(err, errUnreadable):
				t.Fatalf("step %d: offset %d: a failure that is not retryable: %v", step, offset, err)
			case err != nil && w.intactSince(own, scan):
				t.Fatalf("step %d: offset %d unreadable though its version %s has been intact for over a scan interval: %v", step, offset, own, err)
			}
		}
		w.clock.Advance(scan / 2)
		w.clock.BlockUntil(1) // a scan that fell due has run
	}
	if !w.provedEnough() {
		t.Fatalf("the run proves too little in %d steps: %d confirmed reports (%d CORRUPT), %d re-uploads",
			step, w.confirmed, w.corrupt, w.reuploads)
	}
	t.Logf("%d steps: %d confirmed reports (%d CORRUPT), %d reads refused by their checksum, %d re-uploads, %d offsets",
		step, w.confirmed, w.corrupt, w.rejected, w.reuploads, w.end)

	// Every version back: within one scan interval every committed offset
	// reads its own bytes again.
	for ref := range w.faults {
		w.heal(t, ref)
	}
	w.clock.Advance(scan)
	w.clock.BlockUntil(1)
	w.clock.Advance(scan)
	w.clock.BlockUntil(1)
	for offset := w.trim; offset < w.end; offset++ {
		got, rng2, err := w.read(offset)
		if err != nil || !bytes.Equal(got, content(rng2)) {
			t.Fatalf("offset %d with every version intact: %v (%d bytes of %v)", offset, err, len(got), rng2)
		}
	}
}

// minSteps and maxSteps bound a run of the property: minSteps random
// steps, then directed ones (corruptTarget) until provedEnough, which a
// directed step reaches at once unless the offset it picked is already
// broken.
const (
	minSteps = 250
	maxSteps = minSteps + 200
)

// corruptTarget is a directed step: it rewrites one byte inside the range
// an offset now resolves to, in place, and returns the offset for a reader
// to read. The reader's checksum refuses the range, and its CORRUPT report
// is confirmed by the server's own check. No scan runs in between: the
// repair loop waits on the clock, which only the main loop advances.
func (w *versionWorld) corruptTarget(t *testing.T, rng *rand.Rand) (uint64, bool) {
	offset := w.trim + uint64(rng.IntN(int(w.end-w.trim)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := w.res.Resolve(ctx, resolver.Request{Stream: w.stream, View: fsm.Committed, Offset: offset})
	if err != nil || res.Outcome != resolver.TargetFound || res.Target.Bytes.Length == 0 {
		return 0, false
	}
	tg := res.Target
	if w.faults[tg.Object] != nil {
		return 0, false
	}
	path := w.path(tg.Object)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), orig...)
	bad[tg.Bytes.Offset+uint64(rng.IntN(int(tg.Bytes.Length)))] ^= byte(1 + rng.IntN(255))
	replaceFile(t, path, bad)
	w.faults[tg.Object] = &fault{orig: orig}
	return offset, true
}

// provedEnough reports whether the run has exercised every fault it
// checks against: confirmed reports, a CORRUPT one among them, and
// re-uploads with other bytes.
func (w *versionWorld) provedEnough() bool {
	return w.confirmed > 0 && w.corrupt > 0 && w.reuploads > 0
}

// bytesPerOffset is the size of one offset's content in an object.
const bytesPerOffset = 4

// content is the bytes of offsets r: each offset's own, whatever object
// or version holds them.
func content(r fsm.Range) []byte {
	var out []byte
	for o := r.Start; o < r.End; o++ {
		out = binary.BigEndian.AppendUint32(out, uint32(o*2654435761)^0x5bd1e995)
	}
	return out
}

var errUnreadable = errors.New("every candidate read failed")

// fault is how one version is broken: removed, or a byte rewritten.
type fault struct {
	orig    []byte // the version's bytes
	removed bool
}

type versionWorld struct {
	t       *testing.T
	store   *fsmtest.Store
	local   *objectstore.Local
	objects readpath.Objects
	clock   *fakeclock.Clock
	repair  *repair.Service
	res     *resolver.Resolver
	stream  uint64
	end     uint64 // committed end
	trim    uint64
	gen     uint64 // last COMMITTED generation published
	// owner is each offset's own version: the one its append named.
	owner map[uint64]fsm.ObjectRef
	// keys are the object keys written, each with its newest version.
	keys   []string
	newest map[string]fsm.ObjectRef
	// versions lists every version written; faults those broken now;
	// since when each was last made whole.
	versions []fsm.ObjectRef
	faults   map[fsm.ObjectRef]*fault
	healed   map[fsm.ObjectRef]time.Time
	// Counters that show the run exercised what it checks: reports the
	// server confirmed (CORRUPT ones apart), reads the reader's checksum
	// refused, re-uploads with other bytes.
	confirmed, corrupt, rejected, reuploads int
}

func newVersionWorld(t *testing.T, verifyObjects bool) *versionWorld {
	local, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &versionWorld{
		t: t, store: fsmtest.New(), local: local, objects: readpath.Objects{Store: local},
		clock: fakeclock.New(time.Unix(0, 0)), owner: map[uint64]fsm.ObjectRef{}, newest: map[string]fsm.ObjectRef{},
		faults: map[fsm.ObjectRef]*fault{}, healed: map[fsm.ObjectRef]time.Time{},
	}
	w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: 3}}})
	w.stream = w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}}).StreamId
	w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: w.stream}}})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w.repair, err = repair.New(repair.DefaultConfig(), repairStore{w.store}, log, nil,
		repair.WithClock(w.clock), repair.WithVerifier(w.objects))
	if err != nil {
		t.Fatal(err)
	}
	deps := resolver.Deps{
		Reader: machineReader{w.store}, Pinner: machinePinner{w.store}, Repairer: w.repair,
		Reporter: confirmingReporter{w}, Clock: instantClock{},
	}
	if verifyObjects { // --verify-objects: the server checks each target's range too
		deps.Verifier = w.objects
	}
	t.Logf("verify objects: %v", verifyObjects)
	if w.res, err = resolver.New(resolver.DefaultConfig(), deps); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *versionWorld) runRepair() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.repair.Run(ctx) }()
	w.clock.BlockUntil(1)
	return func() { cancel(); <-done }
}

// mutate takes one random step of the writers or the faults.
func (w *versionWorld) mutate(t *testing.T, rng *rand.Rand, step int) {
	switch n := rng.IntN(20); {
	case n < 4:
		w.appendObject(rng, "")
	case n < 7:
		// A re-upload with other bytes: a new version of a key, which
		// later appends name; the key's earlier versions keep theirs.
		w.appendObject(rng, w.keys[rng.IntN(len(w.keys))])
		w.reuploads++
	case n < 8:
		w.reuploadSame(t, rng)
	case n < 12:
		w.breakVersion(t, rng)
	case n < 15 && len(w.faults) > 0:
		// The oldest broken version, in the order written (not a map's
		// order, so that METAD_SEED replays the run).
		for _, ref := range w.versions {
			if w.faults[ref] != nil {
				w.heal(t, ref)
				break
			}
		}
	case n < 16:
		w.publishPacked(rng)
	case n < 17 && w.end-w.trim > 20:
		w.trimTo(w.trim + uint64(rng.IntN(5)))
	}
	_ = step
}

// appendObject writes the next offsets as a new object, or as a new
// version of key, and commits them naming it.
func (w *versionWorld) appendObject(rng *rand.Rand, key string) {
	t := w.t
	n := uint64(1 + rng.IntN(8))
	r := fsm.Range{Start: w.end, End: w.end + n}
	if key == "" {
		key = fmt.Sprintf("obj-%d", len(w.keys))
		w.keys = append(w.keys, key)
	}
	// A prefix of its own makes each version's bytes differ, so a read of
	// another version's slice returns another offset's content.
	prefix := bytes.Repeat([]byte{byte(r.Start)}, 1+rng.IntN(7))
	ref := w.put(key, append(prefix, content(r)...))
	b := fsm.ByteRange{Offset: uint64(len(prefix)), Length: n * bytesPerOffset}
	w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
		StreamId: w.stream, WriterEpoch: 1, ExpectedStart: r.Start, End: r.End, Object: ref.PB(), Bytes: b.PB(),
		IndexGen0: rng.IntN(5) != 0, DataCrc32C: checksum.Of(content(r)).Ptr(),
	}}})
	for o := r.Start; o < r.End; o++ {
		w.owner[o] = ref
	}
	w.end = r.End
}

// put stores a version and registers it.
func (w *versionWorld) put(key string, p []byte) fsm.ObjectRef {
	info, err := w.local.Put(context.Background(), key, bytes.NewReader(p))
	if err != nil {
		w.t.Fatal(err)
	}
	ref := fsm.ObjectRef{Key: key, Identity: info.Identity}
	w.store.Must(w.t, &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: ref.PB(), Size: uint64(len(p))}}})
	if _, seen := w.healed[ref]; !seen {
		w.versions = append(w.versions, ref)
		w.healed[ref] = time.Time{}
	}
	w.newest[key] = ref
	return ref
}

// reuploadSame puts a key's newest version's bytes again: the file store
// names identical bytes with the same identity, so this is the same
// version, and registering it again changes nothing.
func (w *versionWorld) reuploadSame(t *testing.T, rng *rand.Rand) {
	key := w.keys[rng.IntN(len(w.keys))]
	ref := w.newest[key]
	if w.faults[ref] != nil {
		return
	}
	p, err := os.ReadFile(w.path(ref))
	if err != nil {
		t.Fatal(err)
	}
	if again := w.put(key, p); again != ref {
		t.Fatalf("the same bytes under %q named %s, then %s", key, ref, again)
	}
}

// publishPacked publishes a COMMITTED generation over [trim, end) whose
// records name slices of one packed object: a newer candidate for every
// offset, over a version of its own.
func (w *versionWorld) publishPacked(rng *rand.Rand) {
	t := w.t
	if w.end == w.trim {
		return
	}
	w.gen++
	key := fmt.Sprintf("packed-%d", w.gen)
	w.keys = append(w.keys, key)
	var packed []byte
	type slice struct {
		r fsm.Range
		b fsm.ByteRange
	}
	var slices []slice
	for start := w.trim; start < w.end; {
		end := min(w.end, start+uint64(1+rng.IntN(6)))
		r := fsm.Range{Start: start, End: end}
		slices = append(slices, slice{r, fsm.ByteRange{Offset: uint64(len(packed)), Length: (end - start) * bytesPerOffset}})
		packed = append(packed, content(r)...)
		start = end
	}
	ref := w.put(key, packed)
	var recs []*fsmpb.IndexRecord
	for _, s := range slices {
		k := fsm.IndexKey{Stream: w.stream, View: fsm.Committed, Generation: w.gen, Start: s.r.Start}
		recs = append(recs, fsm.NewIndexRecordData(k, s.r, nil, ref, s.b, checksum.Of(content(s.r))))
	}
	w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
		StreamId: w.stream, View: fsm.Committed, Generation: w.gen, WriterEpoch: 1,
		Coverage: fsm.Range{Start: w.trim, End: w.end}.PB(), Records: recs, Complete: true,
	}}})
}

func (w *versionWorld) trimTo(offset uint64) {
	w.store.Must(w.t, &fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: w.stream, Offset: offset}}})
	w.trim = offset
}

func (w *versionWorld) path(ref fsm.ObjectRef) string {
	p, ok := w.local.VersionPath(ref.Key, ref.Identity)
	if !ok {
		w.t.Fatalf("no path for %s", ref)
	}
	return p
}

// breakVersion removes a version, or rewrites one byte of it in place.
// Each change is a new file renamed over the old one (as a rewrite by
// another process would be), so no cached digest outlives it.
func (w *versionWorld) breakVersion(t *testing.T, rng *rand.Rand) {
	ref := w.versions[rng.IntN(len(w.versions))]
	if w.faults[ref] != nil {
		return
	}
	path := w.path(ref)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &fault{orig: orig, removed: rng.IntN(2) == 0}
	if f.removed {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	} else {
		bad := append([]byte(nil), orig...)
		bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		replaceFile(t, path, bad)
	}
	w.faults[ref] = f
}

func (w *versionWorld) heal(t *testing.T, ref fsm.ObjectRef) {
	f := w.faults[ref]
	if f == nil {
		return
	}
	replaceFile(t, w.path(ref), f.orig)
	delete(w.faults, ref)
	w.healed[ref] = w.clock.Now()
}

func replaceFile(t *testing.T, path string, p []byte) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// pickOffset is a committed, untrimmed offset: half the time one whose
// own version is broken now (if any), so that reads meet the faults.
func (w *versionWorld) pickOffset(rng *rand.Rand) uint64 {
	if len(w.faults) > 0 && rng.IntN(2) == 0 {
		var broken []uint64
		for o := w.trim; o < w.end; o++ {
			if w.faults[w.owner[o]] != nil {
				broken = append(broken, o)
			}
		}
		if len(broken) > 0 {
			return broken[rng.IntN(len(broken))]
		}
	}
	return w.trim + uint64(rng.IntN(int(w.end-w.trim)))
}

// intactSince reports whether ref is whole and has been for more than d
// (a version never broken counts from the start).
func (w *versionWorld) intactSince(ref fsm.ObjectRef, d time.Duration) bool {
	return w.faults[ref] == nil && w.clock.Now().Sub(w.healed[ref]) > d
}

// read is a broker's read, as client.Read does it: resolve, read the
// target's range checking its data checksum, and on bytes that are gone
// or wrong report the candidate and resolve again without it, in the same
// view. It returns the bytes and the record range they cover.
func (w *versionWorld) read(offset uint64) ([]byte, fsm.Range, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var exclude []resolver.CandidateID
	for range 64 { // at most one try per candidate: one per generation

		res, err := w.res.Resolve(ctx, resolver.Request{Stream: w.stream, View: fsm.Committed, Offset: offset, Exclude: exclude})
		if err != nil {
			return nil, fsm.Range{}, err
		}
		if res.Outcome != resolver.TargetFound {
			return nil, fsm.Range{}, fmt.Errorf("offset %d below the committed end and above trim answered %v", offset, res.Outcome)
		}
		tg := res.Target
		p, err := objectstore.ReadRange(ctx, w.local, tg.Object.Key, tg.Object.Identity, int64(tg.Bytes.Offset), int64(tg.Bytes.Length), tg.Data)
		if err == nil {
			return p, tg.RecordRange, nil
		}
		if !objectstore.Unusable(err) {
			return nil, fsm.Range{}, err
		}
		kind := fsm.FailureObjectMissing
		if errors.Is(err, objectstore.ErrCorrupt) {
			kind = fsm.FailureCorrupt
			w.rejected++
		}
		id := resolver.CandidateID{Key: tg.Key, Version: tg.Version}
		if err := (confirmingReporter{w}).ReportFailure(ctx, id, kind, err.Error()); err != nil {
			return nil, fsm.Range{}, err
		}
		exclude = append(exclude, id)
	}
	return nil, fsm.Range{}, fmt.Errorf("%w: offset %d", errUnreadable, offset)
}

// confirmingReporter records a failure only if the server's own check of
// the record's bytes (readpath.Objects, the check ConfirmFailure makes)
// finds them unusable, as api.Server.ReportCandidateFailure does.
type confirmingReporter struct{ w *versionWorld }

func (r confirmingReporter) ReportFailure(ctx context.Context, id resolver.CandidateID, kind fsm.FailureKind, detail string) error {
	var rec fsm.RecordInfo
	var found bool
	_ = r.w.store.Read(ctx, func(m *fsm.Machine) {
		rec, found = m.RecordFrom(id.Key.Stream, id.Key.View, id.Key.Generation, id.Key.Start)
	})
	if !found || rec.Version != id.Version {
		return nil // stale: nothing changes
	}
	intact, err := r.w.objects.Intact(ctx, rec.Object, rec.Bytes, rec.Data)
	if err != nil || intact {
		return nil // not confirmed: nothing changes
	}
	res, err := r.w.store.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: id.Key.PB(), Version: id.Version, Kind: kind, Detail: truncate(detail, fsm.MaxDetailLen),
	}}})
	if err == nil && res.Quarantined {
		r.w.confirmed++
		if kind == fsm.FailureCorrupt {
			r.w.corrupt++
		}
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
