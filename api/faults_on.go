//go:build metad_faults

package api

import (
	"context"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/faults"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/readpath"
	"github.com/metad/metad/resolver"
)

// api's one fault seam (faults_off.go is the production build's).

// plantedConsistency: with the planted bug stale-read, a linearizable
// read is served from this node's state without a read index.
func plantedConsistency(c metadpb.Consistency) metadpb.Consistency {
	if c == metadpb.Consistency_LINEARIZABLE && faults.Bug("stale-read") {
		return metadpb.Consistency_STALE
	}
	return c
}

// plantedResolve: with the planted bug cross-view, a resolve that failed
// is tried again in the other view.
func plantedResolve(ctx context.Context, rs *readpath.Resolver, r resolver.Request, res resolver.Result, err error) (resolver.Result, error) {
	if err == nil || !faults.Bug("cross-view") {
		return res, err
	}
	other := fsm.Committed
	if r.View == fsm.Committed {
		other = fsm.TopicCompacted
	}
	r.View, r.Exclude = other, nil
	return rs.Resolve(ctx, r)
}
