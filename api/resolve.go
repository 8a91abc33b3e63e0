package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/faults"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/readpath"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/resolver"
)

// MaxExclusions bounds a resolve's exclusion list.
const MaxExclusions = 256

// Resolve implements the Metad service: DESIGN.md §5 on the real cluster.
func (s *Server) Resolve(ctx context.Context, req *metadpb.ResolveRequest) (*metadpb.ResolveResponse, error) {
	r, err := resolveRequest(req)
	if err != nil {
		s.metrics.outcomes.WithLabelValues("INVALID").Inc()
		return nil, err
	}
	res, err := s.resolver.Resolve(ctx, r)
	if err != nil && faults.Bug("cross-view") { // planted bug: fall back to the other view
		r.View, r.Exclude = otherView(r.View), nil
		res, err = s.resolver.Resolve(ctx, r)
	}
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
		PinShared: t.Pin.Shared,
	}
}

// ---- the resolver's collaborators, over this node ----

// storeReader is the resolver's linearizable Reader.
type storeReader struct{ store *raftstore.Store }

func (r storeReader) Read(ctx context.Context, fn func(resolver.State)) error {
	read := func(m *fsm.Machine) error {
		fn(m)
		return nil
	}
	if faults.Bug("stale-read") { // planted bug: no read index
		return r.store.ReadLocal(read)
	}
	return r.store.Read(ctx, read)
}

// pinner takes pins through Raft (forwarded to the leader when needed).
type pinner struct{ s *Server }

func (p pinner) Pin(ctx context.Context, obj fsm.ObjectRef, ttl time.Duration) (resolver.Pin, error) {
	if p.s.cfg.SharePins {
		return p.sharedPin(ctx, obj, ttl)
	}
	res, err := p.s.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{
		Object: obj.PB(), Holder: "resolve", TtlNanos: int64(ttl),
	}}})
	if err != nil {
		return resolver.Pin{}, err
	}
	if rej := res.Rejection; rej != nil {
		return resolver.Pin{}, pinRefused(rej)
	}
	return resolver.Pin{ID: res.PinId, Expiry: unixNano(res.PinExpiryUnixNano)}, nil
}

// Held offers a shared pin already taken on obj, if one outlives a reader
// starting now.
func (p pinner) Held(obj fsm.ObjectRef, ttl time.Duration) (resolver.Pin, bool) {
	if !p.s.cfg.SharePins {
		return resolver.Pin{}, false
	}
	return p.s.leases.get(obj, ttl)
}

// pinRefused makes a deterministic refusal the resolver's candidate-level
// ErrPinRefused: the object is not live under that identity any more.
func pinRefused(rej *fsmpb.Rejection) error {
	return fmt.Errorf("%w: %s: %s", resolver.ErrPinRefused, rej.Code, rej.Message)
}

func (p pinner) Release(ctx context.Context, pin resolver.Pin) error {
	if pin.Shared {
		return nil // other resolves hold it too; it expires by itself
	}
	res, err := p.s.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_ReleasePin{ReleasePin: &fsmpb.ReleasePin{PinId: pin.ID}}})
	if err == nil && res.Rejection != nil {
		err = errors.New(res.Rejection.Message)
	}
	return err
}

// repairer runs repair on the leader: locally if this node leads, else
// through the leader's Peer service.
type repairer struct{ s *Server }

func (r repairer) Repair(ctx context.Context, stream, offset uint64) error {
	err := r.s.repair.Repair(ctx, stream, offset)
	if !errors.Is(err, repair.ErrNotLeader) {
		return err
	}
	leader, _ := r.s.store.Leader()
	if leader == "" || leader == r.s.store.ID() {
		return fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
	}
	return r.s.peers.forwardRepair(ctx, leader, stream, offset)
}

// Hint is served locally only; on a follower it is dropped and the
// leader's periodic scan finds the record instead.
func (r repairer) Hint(stream, offset uint64) { r.s.repair.Hint(stream, offset) }

// reporter records candidate failures through Raft.
type reporter struct{ s *Server }

func (r reporter) ReportFailure(ctx context.Context, id resolver.CandidateID, kind fsm.FailureKind, detail string) error {
	_, err := r.s.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: id.Key.PB(), Version: id.Version, Kind: kind, Detail: truncate(detail, fsm.MaxDetailLen),
	}}})
	return err
}

// verifier checks physical identity with the object store.
type verifier struct{ store objectstore.Store }

func (v verifier) Verify(ctx context.Context, obj fsm.ObjectRef) error {
	err := objectstore.Verify(ctx, v.store, obj.Key, obj.Identity)
	if errors.Is(err, objectstore.ErrIdentityMismatch) || errors.Is(err, objectstore.ErrNotFound) {
		return fmt.Errorf("%w: %w", resolver.ErrPhysicalMismatch, err)
	}
	return err
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func otherView(v fsm.View) fsm.View {
	if v == fsm.Committed {
		return fsm.TopicCompacted
	}
	return fsm.Committed
}

func outcomeName(o resolver.Outcome) string {
	if o == resolver.TargetFound {
		return "TARGET"
	}
	return o.String()
}

// countingCache counts the cache's hits, misses and invalidations.
type countingCache struct {
	c *readpath.Cache
	m *resolveMetrics
}

func (c countingCache) Get(stream, offset uint64) (resolver.Candidate, bool) {
	cand, ok := c.c.Get(stream, offset)
	if ok {
		c.m.cache.WithLabelValues("hit").Inc()
	} else {
		c.m.cache.WithLabelValues("miss").Inc()
	}
	return cand, ok
}

func (c countingCache) Put(cand resolver.Candidate) { c.c.Put(cand) }

func (c countingCache) Invalidate(id resolver.CandidateID) {
	c.m.cache.WithLabelValues("invalidate").Inc()
	c.c.Invalidate(id)
}
