//go:build !metad_faults

package readpath

import (
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/resolver"
)

// plantedDeps is readpath's one fault seam: the planted bugs stale-read
// and skip-recheck change the resolver's collaborators (faults_on.go,
// built only with -tags metad_faults). In the production build the
// resolver gets them as they are, and no read branches on a fault.
func plantedDeps(deps resolver.Deps, _ *raftstore.Store) resolver.Deps { return deps }
