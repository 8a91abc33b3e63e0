package gc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/internal/fsmtest"
)

type machineStore struct{ *fsmtest.Store }

func (s machineStore) Read(ctx context.Context, fn func(State)) error {
	return s.Store.Read(ctx, func(m *fsm.Machine) { fn(m) })
}

type recordingDeleter struct{ deleted []fsm.ObjectRef }

func (d *recordingDeleter) Delete(ctx context.Context, key, identity string) error {
	d.deleted = append(d.deleted, fsm.ObjectRef{Key: key, Identity: identity})
	return nil
}

// rig: stream 1 with one append in object "used", and an unreferenced
// registered object "idle".
type rig struct {
	s       machineStore
	deleter *recordingDeleter
	c       *Collector
	t       *term
	clock   *fakeclock.Clock
}

var (
	used = fsm.ObjectRef{Key: "used", Identity: "sha256:u"}
	idle = fsm.ObjectRef{Key: "idle", Identity: "sha256:i"}
)

func newRig(t *testing.T) *rig {
	s := machineStore{fsmtest.New()}
	s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}})
	s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: 1}}})
	for _, o := range []fsm.ObjectRef{used, idle} {
		s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: o.PB(), Size: 10}}})
	}
	s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
		StreamId: 1, WriterEpoch: 1, ExpectedStart: 0, End: 10, Object: used.PB(), Bytes: fsm.ByteRange{Length: 10}.PB(), IndexGen0: true,
	}}})
	r := &rig{s: s, deleter: &recordingDeleter{}, t: newTerm(), clock: fakeclock.New(time.Unix(0, 0))}
	cfg := DefaultConfig()
	c, err := New(cfg, s, r.deleter, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, WithClock(r.clock))
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	return r
}

func (r *rig) pass(t *testing.T) {
	t.Helper()
	if err := r.c.pass(context.Background(), r.t); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) status(key string) fsm.ObjectStatus {
	vs := r.s.Machine().ObjectVersions(key)
	if len(vs) != 1 {
		panic(fmt.Sprintf("object %q has %d versions, want 1", key, len(vs)))
	}
	o := vs[0]
	return o.Status
}

func TestUnreferencedObjectIsCollectedAfterMinIdle(t *testing.T) {
	r := newRig(t)
	r.pass(t)
	if r.status("idle") != fsm.ObjectLive {
		t.Fatal("collected before MinIdle: a writer may still be about to reference it")
	}
	r.s.Advance(2 * time.Minute)
	r.pass(t) // marks DELETING; no pin was ever taken: deletes, then DELETED, in the same pass
	if r.status("idle") != fsm.ObjectDeleted || r.status("used") != fsm.ObjectLive ||
		len(r.deleter.deleted) != 1 || r.deleter.deleted[0] != idle {
		t.Fatalf("idle %v used %v, deleted %v", r.status("idle"), r.status("used"), r.deleter.deleted)
	}
}

// TestPinnedObjectSurvivesUntilPinEnds: a pin taken before DELETING keeps
// the bytes until it is released (or outlived), and DELETING refuses new pins.
func TestPinnedObjectSurvivesUntilPinEnds(t *testing.T) {
	r := newRig(t)
	pin := r.s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{Object: idle.PB(), Holder: "reader", TtlNanos: int64(5 * time.Minute)}}})
	r.s.Advance(2 * time.Minute)
	r.pass(t)
	if r.status("idle") != fsm.ObjectDeleting {
		t.Fatalf("status %v", r.status("idle"))
	}
	if res := r.s.Apply(&fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{Object: idle.PB(), TtlNanos: int64(time.Second)}}}); res.Rejection == nil {
		t.Fatal("a DELETING object accepted a new pin")
	}
	// The pin is still counted (not released, not pruned), and has three
	// minutes to run.
	r.pass(t)
	r.clock.Advance(time.Minute)
	r.pass(t)
	if len(r.deleter.deleted) != 0 {
		t.Fatal("deleted while a pin was outstanding")
	}
	r.s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_ReleasePin{ReleasePin: &fsmpb.ReleasePin{PinId: pin.PinId}}})
	r.pass(t)
	if len(r.deleter.deleted) != 1 || r.status("idle") != fsm.ObjectDeleted {
		t.Fatalf("after release: %v %v", r.deleter.deleted, r.status("idle"))
	}
}

// TestLeaderOutlivesUnexpiredPins: a pin that has not expired at the mark
// holds the bytes until machine time would have reached its expiry plus the
// skew margin, measured on the leader's own clock: no write needed.
func TestLeaderOutlivesUnexpiredPins(t *testing.T) {
	r := newRig(t)
	r.s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{Object: idle.PB(), TtlNanos: int64(100 * time.Second)}}})
	// Past MinIdle; the pin runs 100s-70s = 30s more, plus the margin.
	r.s.Advance(70 * time.Second)
	r.pass(t) // DELETING, first seen with a pin
	r.clock.Advance(30*time.Second + DefaultConfig().SkewMargin - time.Second)
	r.pass(t)
	if len(r.deleter.deleted) != 0 {
		t.Fatal("deleted before the pin expired (plus the margin) on the leader's clock")
	}
	r.clock.Advance(time.Second)
	r.pass(t)
	if len(r.deleter.deleted) != 1 {
		t.Fatal("never deleted after outliving the pin")
	}
}

// TestExpiredPinDoesNotDelay: once machine time is past a pin's expiry plus
// the skew margin, no holder relies on it, though the machine prunes it only
// at a later write; GC does not wait for that write.
func TestExpiredPinDoesNotDelay(t *testing.T) {
	r := newRig(t)
	r.s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{Object: idle.PB(), TtlNanos: int64(time.Second)}}})
	r.s.Advance(2 * time.Minute)
	r.pass(t)
	if len(r.deleter.deleted) != 1 || r.status("idle") != fsm.ObjectDeleted {
		t.Fatalf("deleted %v, status %v", r.deleter.deleted, r.status("idle"))
	}
}

func TestReferencedObjectIsNeverMarked(t *testing.T) {
	r := newRig(t)
	r.s.Advance(time.Hour)
	r.pass(t)
	r.pass(t)
	if r.status("used") != fsm.ObjectLive {
		t.Fatal("referenced object marked")
	}
	// Trimming the only append unlinks it (committed first); then it goes.
	r.s.Must(t, &fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: 1, Offset: 10}}})
	r.s.Advance(2 * time.Minute)
	r.pass(t)
	r.pass(t)
	if r.status("used") != fsm.ObjectDeleted {
		t.Fatalf("after trim: %v", r.status("used"))
	}
}

// TestRunCollectsOnItsClock: the loop passes when its clock says an
// Interval has gone by, and only then.
func TestRunCollectsOnItsClock(t *testing.T) {
	r := newRig(t)
	r.s.Advance(2 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.c.Run(ctx) }()
	r.clock.BlockUntil(1) // the pass timer is armed
	if r.status("idle") != fsm.ObjectLive {
		t.Fatal("collected before the first Interval")
	}
	r.clock.Advance(DefaultConfig().Interval)
	r.clock.BlockUntil(1) // the pass ran and the timer is armed again
	cancel()
	<-done
	if r.status("idle") != fsm.ObjectDeleted {
		t.Fatalf("after one Interval: %v", r.status("idle"))
	}
}

func TestRunStopsWithContext(t *testing.T) {
	r := newRig(t)
	r.c.cfg.Interval = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.c.Run(ctx) }()
	cancel()
	<-done
}

func TestDecideAndConfig(t *testing.T) {
	o := fsm.ObjectInfo{Status: fsm.ObjectLive, IdleSince: 0}
	if Decide(o, int64(time.Minute), time.Minute) != MarkDeleting || Decide(o, 1, time.Minute) != Keep {
		t.Fatal("idle rule")
	}
	o.References = 1
	if Decide(o, int64(time.Hour), 0) != Keep {
		t.Fatal("referenced object")
	}
	if (Config{}).Validate() == nil || DefaultConfig().Validate() != nil {
		t.Fatal("config validation")
	}
}

// TestQuietClusterStillCollects: machine time moves only with commands; in
// a cluster where nothing is written, the leader's clock decides idleness.
func TestQuietClusterStillCollects(t *testing.T) {
	r := newRig(t)
	r.clock.Advance(time.Unix(0, r.s.Machine().Clock()).Sub(r.clock.Now()))
	r.pass(t)
	if r.status("idle") != fsm.ObjectLive {
		t.Fatal("collected before MinIdle")
	}
	r.clock.Advance(2 * time.Minute) // no command applied meanwhile
	r.pass(t)
	if r.status("idle") != fsm.ObjectDeleted {
		t.Fatalf("status %v: a quiet cluster never collects", r.status("idle"))
	}
}
