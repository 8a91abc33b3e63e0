package api

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/resolver"
)

// MaxExclusions bounds a resolve's exclusion list.
const MaxExclusions = 256

// Resolve implements the Metad service: the resolve pipeline
// (ARCHITECTURE.md, "The walk of a resolve") on the real cluster.
func (s *Server) Resolve(ctx context.Context, req *metadpb.ResolveRequest) (*metadpb.ResolveResponse, error) {
	r, err := resolveRequest(req)
	if err != nil {
		s.metrics.outcomes.WithLabelValues("INVALID").Inc()
		return nil, err
	}
	res, err := s.resolver.Resolve(ctx, r)
	res, err = plantedResolve(ctx, s.resolver, r, res, err) // the fault seam (faults_off.go): as it is
	if err != nil {
		var ue *resolver.UnavailableError
		if errors.As(err, &ue) {
			s.metrics.observe("UNAVAILABLE", resolver.Result{Attempts: ue.Attempts}, ue.Tried)
		}
		return nil, toStatus(err)
	}
	s.metrics.observe(outcomeName(res.Outcome), res, res.Tried)
	resp := &metadpb.ResolveResponse{
		Trim: res.Trim, CommittedEnd: res.CommittedEnd, ViewEnd: res.ViewEnd, ReadIndex: res.ReadIndex,
		Attempts: uint32(res.Attempts), Tried: refusalsPB(res.Tried),
	}
	switch res.Outcome {
	case resolver.TargetFound:
		resp.Outcome, resp.Target = metadpb.Outcome_TARGET, s.targetPB(res.Target)
	case resolver.EOF:
		resp.Outcome = metadpb.Outcome_EOF
	case resolver.Trimmed:
		resp.Outcome = metadpb.Outcome_OFFSET_TRIMMED
	case resolver.ViewEnd:
		resp.Outcome = metadpb.Outcome_VIEW_END
	case resolver.NotFound:
		resp.Outcome = metadpb.Outcome_NOT_FOUND
	default:
		return nil, toStatus(fmt.Errorf("resolver returned outcome %v", res.Outcome))
	}
	return resp, nil
}

// resolveRequest validates a request: a real view, a sane offset, and
// well-formed exclusions of the same stream and view.
func resolveRequest(req *metadpb.ResolveRequest) (resolver.Request, error) {
	view := viewToFSM(req.View)
	switch {
	case req.StreamId == 0:
		return resolver.Request{}, invalidArgument("stream_id", "required")
	case !fsm.ValidView(view):
		return resolver.Request{}, invalidArgument("view", "must be COMMITTED or TOPIC_COMPACTED, not %v", req.View)
	case req.Offset > fsm.MaxOffset:
		return resolver.Request{}, invalidArgument("offset", "%d is beyond the largest offset %d", req.Offset, fsm.MaxOffset)
	case len(req.Exclude) > MaxExclusions:
		return resolver.Request{}, invalidArgument("exclude", "%d exclusions; at most %d", len(req.Exclude), MaxExclusions)
	case len(req.Holder) > fsm.MaxHolderLen:
		return resolver.Request{}, invalidArgument("holder", "longer than %d bytes", fsm.MaxHolderLen)
	}
	r := resolver.Request{Stream: req.StreamId, View: view, Offset: req.Offset}
	for i, ex := range req.Exclude {
		field := fmt.Sprintf("exclude[%d]", i)
		if ex.GetKey() == nil || ex.Version == 0 {
			return resolver.Request{}, invalidArgument(field, "needs a key and a version")
		}
		k := indexKeyToFSM(ex.Key)
		if k.Stream != req.StreamId || k.View != view {
			return resolver.Request{}, invalidArgument(field+".key", "names stream %d view %s, not the request's", k.Stream, k.View)
		}
		r.Exclude = append(r.Exclude, resolver.CandidateID{Key: k, Version: ex.Version})
	}
	return r, nil
}

func (s *Server) targetPB(t resolver.Target) *metadpb.Target {
	return &metadpb.Target{
		Key: indexKeyPB(t.Key), Version: t.Version, Checksum: t.Checksum,
		RecordRange: rangePB(t.RecordRange), Resolved: rangePB(t.Resolved),
		Object: objectPB(t.Object), Bytes: byteRangePB(t.Bytes),
		PinId: t.Pin.ID, PinExpiry: timestamppb.New(t.Pin.Expiry), PinTtl: durationpb.New(s.cfg.Resolver.PinTTL),
		PinShared: t.Pin.Shared, DataCrc32C: t.Data.Ptr(),
	}
}

func outcomeName(o resolver.Outcome) string {
	if o == resolver.TargetFound {
		return "TARGET"
	}
	return o.String()
}
