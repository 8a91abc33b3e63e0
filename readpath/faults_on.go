//go:build metad_faults

package readpath

import (
	"context"

	"github.com/metad/metad/faults"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/resolver"
)

// plantedDeps is readpath's one fault seam (faults_off.go is the
// production build's): with the planted bug stale-read the resolver reads
// this node's applied state without a read index; with skip-recheck it
// returns a target without the linearizable recheck.
func plantedDeps(deps resolver.Deps, store *raftstore.Store) resolver.Deps {
	if faults.Bug("stale-read") {
		deps.Reader = staleReader{store}
	}
	deps.UnsafeSkipRecheck = faults.Bug("skip-recheck")
	return deps
}

// staleReader is the planted bug stale-read: a resolver.Reader that
// answers from the applied state, whatever this node knows of the leader.
type staleReader struct{ raft *raftstore.Store }

func (s staleReader) Read(_ context.Context, fn func(resolver.State)) error {
	return s.raft.ReadLocal(func(m *fsm.Machine) error {
		fn(m)
		return nil
	})
}
