package nemesis

import (
	"context"
	"fmt"
	"strings"
	"time"

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
)

// StoreKinds lists the object-store faults.
var StoreKinds = []string{StoreUnavailable, Flapping}

// storeRestartAllowance is how long a killed weed mini may take to answer
// again after its restart (it starts master, volume, filer and S3).
const storeRestartAllowance = 10 * time.Second

// The store faults' shapes join the table ParseKinds and Plan read.
func init() {
	shapes[StoreUnavailable] = []string{"pause", "kill"}
	shapes[Flapping] = []string{"silent", "reported"}
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
}

// storeFault injects a store-unavailable or flapping fault.
func (r *Runner) storeFault(ctx context.Context, st Step, f history.Fault) injected {
	store := r.Cluster.Store
	if st.Kind == Flapping {
		return r.flap(ctx, st, f)
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
