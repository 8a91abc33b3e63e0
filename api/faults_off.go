//go:build !metad_faults

package api

import (
	"context"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/readpath"
	"github.com/metad/metad/resolver"
)

// api's one fault seam: the planted bugs stale-read and cross-view
// (faults_on.go, built only with -tags metad_faults). In the production
// build each function returns what it is given, so no request branches on
// a fault.

// plantedConsistency is the consistency a read is served at: c.
func plantedConsistency(c metadpb.Consistency) metadpb.Consistency { return c }

// plantedResolve is a resolve's outcome: res and err as they are.
func plantedResolve(_ context.Context, _ *readpath.Resolver, _ resolver.Request, res resolver.Result, err error) (resolver.Result, error) {
	return res, err
}
