package readpath

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/resolver"
	"github.com/metad/metad/tracing"
)

// Config shapes the read path. api.Config embeds it, so cmd/metad's flags
// set it as part of the API's settings.
type Config struct {
	// VerifyObjects makes resolve check the physical identity (HEAD) of
	// every target before returning it, and read its byte range against
	// the record's data checksum. Default false.
	VerifyObjects bool
	// SharePins lets concurrent resolves of one object share one pin (a
	// lease of twice the resolve TTL) instead of each writing its own to
	// Raft. Default true.
	SharePins bool
	// LeaseMargin is how much of a shared pin's life must remain beyond a
	// reader's window for it to be offered: slack for clock-rate drift
	// between this node and readers. Default 5s; range [0, 1m].
	LeaseMargin time.Duration
	// Resolver configures the resolve loop.
	Resolver resolver.Config
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{SharePins: true, LeaseMargin: 5 * time.Second, Resolver: resolver.DefaultConfig()}
}

// Validate reports every out-of-range setting.
func (c Config) Validate() error {
	var errs []error
	if c.LeaseMargin < 0 || c.LeaseMargin > time.Minute {
		errs = append(errs, fmt.Errorf("readpath: LeaseMargin %s outside [0, 1m]", c.LeaseMargin))
	}
	if err := c.Resolver.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ProposeFunc proposes a command on the leader, forwarding it there from
// a follower (api's forwarding, peer.go).
type ProposeFunc func(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error)

// RepairOnLeaderFunc asks the leader's repair loop, through its Peer
// service, to rebuild the record covering offset.
type RepairOnLeaderFunc func(ctx context.Context, leaderID string, stream, offset uint64) error

// Deps are the node's parts the resolver's collaborators work over.
// Objects and Metrics may be nil.
type Deps struct {
	// Store is this node's Raft store: linearizable reads, the leader's id.
	Store *raftstore.Store
	// Propose takes and releases pins and records failure reports, from
	// any node.
	Propose ProposeFunc
	// Repair is this node's repair loop; it serves requests while this
	// node leads. RepairOnLeader reaches the leader's otherwise.
	Repair         *repair.Service
	RepairOnLeader RepairOnLeaderFunc
	// Objects checks targets' identity when Config.VerifyObjects.
	Objects objectstore.Store
	// Metrics receives the resolve cache's metric and the pins gauges
	// (metrics.go); nil leaves them unregistered.
	Metrics prometheus.Registerer
	// Clock is the resolve loop's and the shared leases' time source; nil
	// is clock.Real.
	Clock clock.Clock
}

// Resolver is resolver.Resolver wired to this node: its collaborators over
// Raft, the repair loop and the object store, the resolve cache and the
// shared pin leases.
type Resolver struct {
	loop    *resolver.Resolver
	cache   *Cache
	store   *raftstore.Store
	objects objectstore.Store
}

// New returns a Resolver.
func New(cfg Config, deps Deps) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil || deps.Propose == nil || deps.Repair == nil || deps.RepairOnLeader == nil {
		return nil, errors.New("readpath: Store, Propose, Repair and RepairOnLeader are required")
	}
	r := &Resolver{cache: NewCache(), store: deps.Store, objects: deps.Objects}
	cacheEvents := newCacheEvents()
	if deps.Metrics != nil {
		deps.Metrics.MustRegister(cacheEvents, newPinCollector(deps.Store.ReadLocal))
	}
	clk := deps.Clock
	if clk == nil {
		clk = clock.Real
	}
	pins := pinner{propose: deps.Propose}
	if cfg.SharePins {
		pins.leases = newLeases(cfg.LeaseMargin, clk)
	}
	rdeps := resolver.Deps{
		Reader: NewStore[resolver.State](deps.Store), Pinner: pins,
		Repairer: repairer{repair: deps.Repair, store: deps.Store, onLeader: deps.RepairOnLeader},
		Reporter: reporter{deps.Propose}, Clock: clk, Cache: countingCache{c: r.cache, events: cacheEvents},
	}
	rdeps = plantedDeps(rdeps, deps.Store) // the fault seam (faults_off.go): rdeps as they are
	if cfg.VerifyObjects && deps.Objects != nil {
		rdeps.Verifier = Objects{Store: deps.Objects}
	}
	loop, err := resolver.New(cfg.Resolver, rdeps)
	if err != nil {
		return nil, err
	}
	r.loop = loop
	return r, nil
}

// Resolve runs the resolve pipeline (ARCHITECTURE.md, "The walk of a
// resolve") on this node.
func (r *Resolver) Resolve(ctx context.Context, req resolver.Request) (resolver.Result, error) {
	// The resolve's steps (the plan's read, the pin's proposal, the
	// recheck's read) are its children: raftstore traces each.
	ctx, end := tracing.Start(ctx, "resolve", tracing.Int("metad.stream", req.Stream),
		tracing.String("metad.view", req.View.String()), tracing.Int("metad.offset", req.Offset))
	res, err := r.loop.Resolve(ctx, req)
	end(err)
	return res, err
}

// Invalidate drops the cached hint of a candidate a reader could not use.
func (r *Resolver) Invalidate(id resolver.CandidateID) { r.cache.Invalidate(id) }

// ---- the resolver's collaborators, over this node ----

// pinner takes pins through Raft (forwarded to the leader when needed),
// shared through leases unless leases is nil.
type pinner struct {
	propose ProposeFunc
	leases  *leases
}

func (p pinner) Pin(ctx context.Context, obj fsm.ObjectRef, ttl time.Duration) (resolver.Pin, error) {
	if p.leases != nil {
		return p.sharedPin(ctx, obj, ttl)
	}
	res, err := p.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{
		Object: obj.PB(), Holder: "resolve", TtlNanos: int64(ttl),
	}}})
	if err != nil {
		return resolver.Pin{}, err
	}
	if rej := res.Rejection; rej != nil {
		return resolver.Pin{}, pinRefused(rej)
	}
	return resolver.Pin{ID: res.PinId, Expiry: time.Unix(0, res.PinExpiryUnixNano)}, nil
}

// Held offers a shared pin already taken on obj, if one outlives a reader
// starting now.
func (p pinner) Held(obj fsm.ObjectRef, ttl time.Duration) (resolver.Pin, bool) {
	if p.leases == nil {
		return resolver.Pin{}, false
	}
	return p.leases.get(obj, ttl)
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
	res, err := p.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_ReleasePin{ReleasePin: &fsmpb.ReleasePin{PinId: pin.ID}}})
	if err == nil && res.Rejection != nil {
		err = errors.New(res.Rejection.Message)
	}
	return err
}

// repairer runs repair on the leader: locally if this node leads, else
// through the leader's Peer service.
type repairer struct {
	repair   *repair.Service
	store    *raftstore.Store
	onLeader RepairOnLeaderFunc
}

func (r repairer) Repair(ctx context.Context, stream, offset uint64) error {
	err := r.repair.Repair(ctx, stream, offset)
	if !errors.Is(err, repair.ErrNotLeader) {
		return err
	}
	leader, _ := r.store.Leader()
	if leader == "" || leader == r.store.ID() {
		return fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
	}
	return r.onLeader(ctx, leader, stream, offset)
}

// Hint is served locally only; on a follower it is dropped and the
// leader's periodic scan finds the record instead.
func (r repairer) Hint(stream, offset uint64) { r.repair.Hint(stream, offset) }

// reporter records candidate failures through Raft.
type reporter struct{ propose ProposeFunc }

func (r reporter) ReportFailure(ctx context.Context, id resolver.CandidateID, kind fsm.FailureKind, detail string) error {
	_, err := r.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: id.Key.PB(), Version: id.Version, Kind: kind, Detail: truncate(detail, fsm.MaxDetailLen),
	}}})
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
