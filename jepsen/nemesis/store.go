package nemesis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/jepsen/history"
)

// Object-store faults (store.go): not in AllKinds, so the matrices leave
// them out; a run asks for them by name.
const (
	// StoreUnavailable makes the whole object store unavailable while
	// resolves and reads run: weed mini paused with SIGSTOP (pause) or
	// killed and restarted on the same ports and data (kill). S3 only.
	StoreUnavailable = "store-unavailable"
	// Flapping makes one object the cluster references vanish and return:
	// unreported (silent), or reported OBJECT_MISSING by the nemesis as a
	// broker that failed to read it would (reported), which quarantines
	// the record until the repair job sees the bytes again.
	Flapping = "flapping"
	// Corrupt rewrites a byte inside the committed byte range of object
	// versions the cluster references, in place, and writes it back at the
	// heal: one version (one) or up to three (several). Readers must find
	// the bytes failing the data checksum their writer committed, fall
	// back within the view and report them CORRUPT; nothing may return
	// them. With S3 the proxy flips a byte of every GET body of the key.
	Corrupt = "corrupt"
)

// StoreKinds lists the object-store faults.
var StoreKinds = []string{StoreUnavailable, Flapping, Corrupt}

// corruptTargetWait is how long a corrupt fault waits for readers to have
// read a target intact (early in a run they may not have); the schedule
// budgets it.
const corruptTargetWait = 2 * time.Second

// storeRestartAllowance is how long a killed weed mini may take to answer
// again after its restart (it starts master, volume, filer and S3).
const storeRestartAllowance = 10 * time.Second

// The store faults' shapes join the table ParseKinds and Plan read.
func init() {
	shapes[StoreUnavailable] = []string{"pause", "kill"}
	shapes[Flapping] = []string{"silent", "reported"}
	shapes[Corrupt] = []string{"one", "several"}
}

// NeedsS3 reports whether a kind (with or without its shape) can only run
// against the S3 store: a local directory cannot be made to stop
// answering the way a stopped server does.
func NeedsS3(kind string) bool {
	k, _, _ := strings.Cut(kind, ":")
	return k == StoreUnavailable
}

// Objects is what the flapping nemesis asks of the workload.
type Objects interface {
	// FlapTarget returns one of the targets readers recently read intact;
	// pick chooses which.
	FlapTarget(pick int) (history.Target, bool)
	// ReportHidden reports the target's candidate OBJECT_MISSING and
	// records the report.
	ReportHidden(ctx context.Context, t history.Target) history.Op
	// FreshTargets returns up to n recently read targets of distinct
	// objects, those least likely to be trimmed soon first.
	FreshTargets(n int) []history.Target
	// Heat has readers re-read the targets until Cool: the corrupt
	// nemesis's bytes are read while they are bad.
	Heat(ts []history.Target)
	Cool()
}

// storeFault injects a store-unavailable or flapping fault.
func (r *Runner) storeFault(ctx context.Context, st Step, f history.Fault) injected {
	store := r.Cluster.Store
	switch st.Kind {
	case Flapping:
		return r.flap(ctx, st, f)
	case Corrupt:
		return r.corrupt(ctx, st, f)
	}
	f.Targets = []string{"weed"}
	switch st.Shape {
	case "pause":
		if err := store.PauseStore(); err != nil {
			f.Error = err.Error()
			return injected{fault: f}
		}
		return injected{fault: f, heal: func(context.Context) { store.ResumeStore() }}
	default: // kill
		if err := store.KillStore(); err != nil {
			f.Error = err.Error()
			return injected{fault: f}
		}
		return injected{fault: f, heal: func(context.Context) {
			if err := store.RestartStore(); err != nil {
				r.Log.Error("nemesis: weed restart failed", "err", err)
			}
		}}
	}
}

// flapTries bounds the targets tried: a recently read object may have
// been collected since (the local store's file is gone).
const flapTries = 8

// flap hides one referenced object until the heal. With the reported
// shape the nemesis also reports it missing, so the record is quarantined
// and must heal by itself once the bytes are back.
func (r *Runner) flap(ctx context.Context, st Step, f history.Fault) injected {
	store := r.Cluster.Store
	var err error
	for i := range flapTries {
		t, ok := r.Objects.FlapTarget(st.Perm[0]*7 + i)
		if !ok {
			err = fmt.Errorf("no target read yet to hide")
			break
		}
		if err = store.Hide(t.Object.Key, t.Object.Identity); err != nil {
			continue
		}
		obj := t.Object
		f.Object, f.Targets = &obj, []string{t.Object.Key}
		f.Detail = fmt.Sprintf("hid %s (stream %d %s g%d/%d@%d)", t.Object.Key, t.Stream, t.View, t.Generation, t.Start, t.Version)
		if st.Shape == "reported" {
			op := r.Objects.ReportHidden(ctx, t)
			f.Detail += fmt.Sprintf("; reported OBJECT_MISSING: %s", reportSummary(op))
		}
		return injected{fault: f, heal: func(context.Context) {
			if err := store.RestoreAll(); err != nil {
				r.Log.Error("nemesis: restore failed", "err", err)
			}
		}}
	}
	f.Error = fmt.Sprintf("nothing hidden: %v", err)
	return injected{fault: f}
}

func reportSummary(op history.Op) string {
	if op.Out == nil || op.Out.Report == nil {
		return fmt.Sprintf("%s %s", op.Status, op.Error)
	}
	return fmt.Sprintf("confirmed=%v quarantined=%v (%s)", op.Out.Report.Confirmed, op.Out.Report.Quarantined, op.Out.Report.Verdict)
}

// corrupt flips one byte inside the byte range of one (or up to three)
// targets readers recently read intact, those deepest above their trim
// point, until the heal writes them back; readers re-read them meanwhile
// (Heat). The fault names every object corrupted (model: reads of their
// keys may fail while it holds), the detail every byte.
func (r *Runner) corrupt(ctx context.Context, st Step, f history.Fault) injected {
	store := r.Cluster.Store
	want := 1
	if st.Shape == "several" {
		want = 3
	}
	var done []string
	var hot []history.Target
	err := fmt.Errorf("no target read yet to corrupt")
	fresh := r.Objects.FreshTargets(want + 2)
	for end := clock.Real.Now().Add(corruptTargetWait); len(fresh) == 0 && clock.Real.Now().Before(end) && sleep(ctx, 250*time.Millisecond) == nil; {
		fresh = r.Objects.FreshTargets(want + 2) // the readers have read nothing intact yet
	}
	f.Start = clock.Real.Now().UnixNano()
	for i, t := range fresh {
		if len(done) == want {
			break
		}
		at := int64(t.Bytes.Offset) + int64((st.Perm[0]*31+i*7)%int(t.Bytes.Length))
		if err = store.Corrupt(t.Object.Key, t.Object.Identity, at); err != nil {
			continue
		}
		if f.Object == nil {
			obj := t.Object
			f.Object = &obj
		}
		f.Objects = append(f.Objects, t.Object)
		hot = append(hot, t)
		f.Targets = append(f.Targets, t.Object.Key)
		where := fmt.Sprintf("byte %d of", at)
		if store.Kind == cluster.StoreS3 {
			where = "the middle byte of every GET body of" // the proxy's corruption is by key
		}
		done = append(done, fmt.Sprintf("%s %s@%s (stream %d %s g%d/%d@%d, bytes %d+%d)", where, t.Object.Key,
			clipID(t.Object.Identity), t.Stream, t.View, t.Generation, t.Start, t.Version, t.Bytes.Offset, t.Bytes.Length))
	}
	if len(done) == 0 {
		f.Error = fmt.Sprintf("nothing corrupted: %v", err)
		return injected{fault: f}
	}
	f.Detail = "flipped " + strings.Join(done, "; ")
	r.Objects.Heat(hot)
	return injected{fault: f, heal: func(context.Context) {
		r.Objects.Cool()
		if err := store.RestoreCorrupted(); err != nil {
			r.Log.Error("nemesis: restoring corrupted bytes failed", "err", err)
		}
	}}
}

func clipID(id string) string {
	if len(id) > 20 {
		return id[:20] + "…"
	}
	return id
}
