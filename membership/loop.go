package membership

import (
	"context"
	"errors"
	"sync"
	"time"
)

// metaUpdateTimeout bounds how long the loop waits for memberlist to
// broadcast a metadata change. The broadcast goes out anyway; the wait
// only avoids piling changes up.
const metaUpdateTimeout = time.Second

// run is the loop goroutine: one step per ReconcileInterval, and at once on
// any gossip change or after an applied raft change. A nudge leaves the
// period's timer running, as a ticker would.
func (a *Agent) run(ctx context.Context) {
	tick := a.clock.NewTimer(a.cfg.ReconcileInterval)
	defer tick.Stop()
	for {
		a.step(ctx)
		a.rounds.done()
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			tick.Reset(a.cfg.ReconcileInterval)
		case <-a.nudgeCh:
		}
	}
}

// rounds counts the loop's finished steps, so that a test can wait for the
// loop to have run (and decided nothing) instead of sleeping.
type rounds struct {
	mu      sync.Mutex
	n       uint64
	changed chan struct{} // closed and replaced at every step
}

func newRounds() *rounds { return &rounds{changed: make(chan struct{})} }

func (r *rounds) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	close(r.changed)
	r.changed = make(chan struct{})
}

// count returns the steps finished so far and a channel closed at the next.
func (r *rounds) count() (uint64, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.changed
}

func (a *Agent) step(ctx context.Context) {
	a.table.forget()
	a.refreshBootstrapped()
	a.refreshClusterID()
	if !a.loop.bootstrapDone {
		a.maybeBootstrap()
	}
	if a.raft.IsLeader() {
		a.reconcile(ctx)
	} else if a.loop.leading {
		a.log.Info("no longer raft leader; membership reconcile stopped")
		a.loop = loopState{bootstrapDone: a.loop.bootstrapDone, bootstrapped: a.loop.bootstrapped,
			lastBootstrapReason: a.loop.lastBootstrapReason}
	}
}

// refreshBootstrapped advertises Bootstrapped once raft has a
// configuration, however it got one (bootstrap, or a leader adding this
// node), so forming nodes know a cluster exists.
func (a *Agent) refreshBootstrapped() {
	if a.loop.bootstrapped {
		return
	}
	if servers, err := a.raft.Configuration(); err != nil || len(servers) == 0 {
		return
	}
	if !a.loop.bootstrapDone {
		a.log.Info("raft configuration present; this node will never bootstrap")
		a.loop.bootstrapDone = true
	}
	a.setBootstrapped()
}

func (a *Agent) setBootstrapped() {
	a.loop.bootstrapped = true
	if err := a.meta.update(func(m *Meta) { m.Bootstrapped = true }); err != nil {
		a.log.Error("cannot encode own metadata", "err", err) // unreachable: validated in New
		return
	}
	if a.left.Load() {
		return // an alive broadcast now would undo the leave
	}
	if err := a.ml.UpdateNode(metaUpdateTimeout); err != nil {
		a.log.Debug("metadata broadcast still pending", "err", err)
	}
}

func (a *Agent) maybeBootstrap() {
	if a.hooks.HasState() {
		a.log.Info("raft state found on disk; not bootstrapping")
		a.loop.bootstrapDone = true
		a.setBootstrapped()
		return
	}
	d := decideBootstrap(a.cfg.NodeID, a.cfg.BootstrapExpect, a.table.snapshot())
	if d.Reason != a.loop.lastBootstrapReason {
		a.loop.lastBootstrapReason = d.Reason
		if d.Conflict {
			a.log.Error(d.Reason)
		} else {
			a.log.Info(d.Reason)
		}
	}
	switch d.Verdict {
	case bootstrapNever:
		a.loop.bootstrapDone = true
	case bootstrapNow:
		err := a.hooks.Bootstrap(d.Servers)
		switch {
		case errors.Is(err, ErrAlreadyBootstrapped):
			a.log.Info("raft refused to bootstrap: state already exists; not bootstrapping")
		case errors.Is(err, ErrRaftOpening):
			a.log.Debug("raft store still opening; bootstrapping waits for it")
			a.loop.lastBootstrapReason = "" // log the retry's decision too
			return
		case err != nil:
			a.log.Error("raft bootstrap failed; will retry", "err", err)
			a.loop.lastBootstrapReason = "" // log the retry's decision too
			return
		default:
			a.log.Info("raft bootstrapped", "servers", len(d.Servers))
		}
		a.loop.bootstrapDone = true
		a.setBootstrapped()
	}
}
