// Package workload drives metad through its public gRPC API with
// concurrent recording clients and writes every operation to a history:
// one writer per stream (appends through the object store, each with the
// data checksum of its bytes, trims, generations in both views, retires,
// epoch bumps, fenced appends, object replacement, new versions of keys
// it committed appends naming (reupload.go), watched pins), readers
// resolving, reading bytes under the target's identity and checking them
// against the target's data checksum while all that happens, (stream profile) watchers
// following streams with the Watch RPC in resumed sessions (watcher.go),
// (stream-set profile) writers committing one object with appends to
// 2–50 streams in one CommitObject (streamset.go),
// and optionally false reporters (reports.go), which report healthy
// candidates as broken. At the end it lists what stayed quarantined and
// reads every offset back.
//
// Mutations carry request ids; the client library retries retryable
// failures with the same id, and an operation is recorded indeterminate
// ("info") if any attempt might have taken effect, definite otherwise.
package workload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/objectstore"
)

// Profiles name weightings of the operation mix.
const (
	// ProfileStream: write-heavy; every stream operation.
	ProfileStream = "stream"
	// ProfileResolve: read-heavy; resolves under concurrent trims, new and
	// retired generations, GC, and repair (most appends without their
	// generation-0 record).
	ProfileResolve = "resolve"
	// ProfileAppend: appends and reads only (for the durability bug).
	ProfileAppend = "append"
	// ProfileReplace: stream with frequent object replacement, so resolves
	// fail over within their view (for the cross-view bug).
	ProfileReplace = "replace"
	// ProfileReupload: stream whose writers often put new versions of
	// keys they committed appends naming (the same bytes, or other bytes
	// and then an append naming the new version): with many versions per
	// key, every offset must keep reading the version it was committed
	// with (reupload.go).
	ProfileReupload = "reupload"
	// ProfileStreamSet: stream-set writers committing objects that append
	// to 2–50 streams at once (CommitObject), readers, and watchers
	// following 4 streams each: an object's appends are seen in all its
	// streams or in none (streamset.go).
	ProfileStreamSet = "streamset"
)

// Profiles lists the profiles a matrix runs.
var Profiles = []string{ProfileStream, ProfileResolve, ProfileStreamSet}

// Config is one workload.
type Config struct {
	// Profile is one of the Profile* names.
	Profile string
	// Streams is the number of streams (one writer each). Default 6.
	Streams int
	// Readers is the number of reading clients. Default 4.
	Readers int
	// OpTimeout bounds each call, retries included. Default 3s.
	OpTimeout time.Duration
	// SettleTimeout bounds how long a write whose outcome is unknown is
	// called again under its request id, to learn it (settle). Default
	// 20s; a negative value never settles.
	SettleTimeout time.Duration
	// Seed makes each client's choices reproducible.
	Seed int64
	// Clients: one per node (reads pick a node), and All balancing over
	// every node (writers, so a dead node does not stall them).
	Clients []*client.Client
	NodeIDs []string
	All     *client.Client
	// Watchers follow streams with Watch (stream profile only), each on
	// WatchClients: one per node, bound to it (client.Config.SpreadCalls),
	// so a session stays on the node it was drawn for.
	Watchers     int
	WatchClients []*client.Client
	// Objects is the store shared with the servers.
	Objects objectstore.Store
	// Broker, if set, is a client whose Config.Objects is Objects: in the
	// reupload profile one broker reader reads through its client.Read
	// (broker.go). Setup makes its failure reports part of the history.
	Broker *client.Client
	// FalseReports is the number of clients that report healthy
	// candidates as broken (reports.go). Default 0.
	FalseReports int
	// Level is the cluster's feature level (StatusResponse
	// cluster_feature_level): from history.VersionsLevel a key keeps many
	// versions, so a new version replaces nothing. 0: unknown, taken as
	// below it.
	Level uint32
	// UncheckedReads plants a bug in the harness's readers: they skip the
	// data checksum and return whatever bytes the store gave (the planted
	// test shows the checker catches the corrupt nemesis's bytes then).
	UncheckedReads bool
	// HealWait is how long the end-of-run read-back keeps trying an offset
	// (and waits for quarantine to drain): a quarantined record with intact
	// bytes heals within one repair scan interval. Default 0: four tries.
	HealWait time.Duration
	Rec      *history.Recorder
	Log      *slog.Logger
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	switch c.Profile {
	case ProfileStream, ProfileResolve, ProfileAppend, ProfileReplace, ProfileReupload, ProfileStreamSet:
	default:
		errs = append(errs, fmt.Errorf("workload: profile %q unknown", c.Profile))
	}
	if c.Streams < 1 || c.Streams > 64 {
		errs = append(errs, fmt.Errorf("workload: Streams %d outside [1, 64]", c.Streams))
	}
	if c.Readers < 0 || c.Readers > 64 {
		errs = append(errs, fmt.Errorf("workload: Readers %d outside [0, 64]", c.Readers))
	}
	if c.Watchers < 0 || c.Watchers > 16 {
		errs = append(errs, fmt.Errorf("workload: Watchers %d outside [0, 16]", c.Watchers))
	}
	if c.Watchers > 0 && len(c.WatchClients) != len(c.NodeIDs) {
		errs = append(errs, fmt.Errorf("workload: Watchers need one WatchClient per node, have %d for %d nodes", len(c.WatchClients), len(c.NodeIDs)))
	}
	if c.FalseReports < 0 || c.FalseReports > 16 {
		errs = append(errs, fmt.Errorf("workload: FalseReports %d outside [0, 16]", c.FalseReports))
	}
	if c.OpTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("workload: OpTimeout %s below 100ms", c.OpTimeout))
	}
	if len(c.Clients) == 0 || len(c.Clients) != len(c.NodeIDs) || c.All == nil || c.Objects == nil || c.Rec == nil || c.Log == nil {
		errs = append(errs, errors.New("workload: Clients, NodeIDs, All, Objects, Rec and Log are required"))
	}
	return errors.Join(errs...)
}

// Workload is a running workload.
type Workload struct {
	cfg Config
	// gate: operations hold it shared; Quiesce takes it exclusively.
	gate sync.RWMutex
	// streams are the created streams' shared hints (ends for readers);
	// writers their writers. Both are set by Setup, then only read.
	streams []*hint
	writers []*writer
	// watchers are pin-watching goroutines; Run joins them.
	watchers sync.WaitGroup
	// follows are the stream watchers (watcher.go), set by Run.
	follows []*watchFollow
	// recent are targets readers read intact, for the flapping and
	// corrupt nemeses; hot those readers re-read (Heat).
	recentMu sync.Mutex
	recent   []history.Target
	hot      []history.Target
}

// hint is what readers know of a stream, updated by every answer.
type hint struct {
	id        uint64
	end, trim atomic.Uint64
}

func (h *hint) observe(end, trim uint64) {
	for {
		e := h.end.Load()
		if end <= e || h.end.CompareAndSwap(e, end) {
			break
		}
	}
	for {
		t := h.trim.Load()
		if trim <= t || h.trim.CompareAndSwap(t, trim) {
			break
		}
	}
}

// New checks the configuration.
func New(cfg Config) (*Workload, error) {
	if cfg.Streams == 0 {
		cfg.Streams = 6
	}
	if cfg.Profile == ProfileStreamSet {
		cfg.Streams = max(cfg.Streams, setStreams) // an object names up to 50
	}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = 3 * time.Second
	}
	if cfg.SettleTimeout == 0 {
		cfg.SettleTimeout = 20 * time.Second
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Profile != ProfileStream && cfg.Profile != ProfileStreamSet {
		cfg.Watchers = 0 // watchers belong to the stream and stream-set mixes
	}
	return &Workload{cfg: cfg}, nil
}

// Quiesce implements nemesis.Workload.
func (w *Workload) Quiesce(ctx context.Context) { w.gate.Lock() }

// Resume implements nemesis.Workload.
func (w *Workload) Resume() { w.gate.Unlock() }

// Setup creates the streams and opens each for writing. It retries until
// ctx ends: the cluster may still be forming.
func (w *Workload) Setup(ctx context.Context, runID string) error {
	if w.cfg.Broker != nil {
		w.RecordReports(w.cfg.Broker)
	}
	for i := range w.cfg.Streams {
		name := fmt.Sprintf("jepsen-%s-%d", runID, i)
		var id uint64
		err := retry(ctx, func(ctx context.Context) error {
			resp, err := client.Call(ctx, w.cfg.All, w.cfg.All.Metad.CreateStream, createReq(name))
			if err == nil {
				id = resp.StreamId
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("create stream %s: %w", name, err)
		}
		h := &hint{id: id}
		w.streams = append(w.streams, h)
		wr := w.newWriter(h, i)
		if err := retry(ctx, func(ctx context.Context) error { return wr.open(ctx) }); err != nil {
			return fmt.Errorf("open stream %d: %w", id, err)
		}
		w.writers = append(w.writers, wr)
	}
	return nil
}

func retry(ctx context.Context, f func(ctx context.Context) error) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(cctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// Run drives the writers and readers until ctx ends, then waits for every
// client and pin watcher.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if w.cfg.Profile == ProfileStreamSet {
		// The stream writers stay idle: the stream-set writers append to
		// their streams, each stream claimed by one at a time.
		w.runSetWriters(ctx, &wg)
	} else {
		for _, wr := range w.writers {
			wg.Add(1)
			go func() { defer wg.Done(); wr.run(ctx) }()
		}
	}
	for i := range w.cfg.Readers {
		rd := w.newReader(i)
		wg.Add(1)
		go func() { defer wg.Done(); rd.run(ctx) }()
	}
	w.runWatchers(ctx, &wg)
	for i := range w.cfg.FalseReports {
		fr := w.newFalseReporter(i)
		wg.Add(1)
		go func() { defer wg.Done(); fr.run(ctx) }()
	}
	if w.cfg.Broker != nil && w.cfg.Profile == ProfileReupload {
		br := w.newBrokerReader(0)
		wg.Add(1)
		go func() { defer wg.Done(); br.run(ctx) }()
	}
	wg.Wait()
	w.watchers.Wait()
}

// attempts tracks, across the retries of one call, whether any attempt
// might have taken effect.
type attempts struct {
	indeterminate bool
}

// wrap records each attempt's classification. A failure without metad's
// ErrorInfo (a broken connection, a client-side deadline) may have reached
// a server, so it counts as indeterminate.
func wrap[Req, Resp any](a *attempts, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error)) func(context.Context, Req, ...grpc.CallOption) (Resp, error) {
	return func(ctx context.Context, req Req, opts ...grpc.CallOption) (Resp, error) {
		resp, err := rpc(ctx, req, opts...)
		if err != nil && !definite(err) {
			a.indeterminate = true
		}
		return resp, err
	}
}

func definite(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Metadata["definite"] == "true"
		}
	}
	return false
}

// notRefusals are definite failures that are not the state machine's
// answer: the command never ran, so they observed nothing. DISK_FULL is
// the leader refusing growth before it proposes (its data dir's
// filesystem below --disk-reserve): the write did not happen, and says
// nothing of the stream's state.
var notRefusals = map[string]bool{
	"NOT_LEADER": true, "NO_LEADER": true, "NOT_READY": true, "OVERLOADED": true,
	"RESOLVE_UNAVAILABLE": true, "SHUTTING_DOWN": true, "DISK_FULL": true,
}

// classify sets op's status from a call's error and its attempts.
func classify(op *history.Op, err error, a *attempts, write bool) {
	if err == nil {
		op.Status = history.OK
		return
	}
	op.Error = err.Error()
	e, ok := client.AsError(err)
	if ok {
		op.Reason = e.Reason
	}
	switch {
	case !write:
		op.Status = history.Fail
	case ok && e.Definite && !notRefusals[e.Reason]:
		// The state machine (or request validation) refused it; an earlier
		// indeterminate attempt would have been deduplicated into the same
		// answer had it been applied.
		op.Status = history.Rejected
	case a.indeterminate || !ok || !e.Definite:
		op.Status = history.Info
	default:
		op.Status = history.Fail
	}
}

// settle calls a write until its outcome is known, each call bounded by
// OpTimeout. A call whose attempts may have taken effect and whose answer
// is not the state machine's leaves the outcome open, and porcupine must
// then place the op anywhere up to the end of the history: a few of them
// on one stream make its search exponential (a run killing every node
// once left five, and the check ran out of time). The same request, called
// again under its request id, either was applied and gets its recorded
// answer back (the dedup table keeps it for minutes, longer than any run)
// or is applied or refused now; either way its effect lies between the
// first call and the last return. Settling stops when the workload stops
// or after SettleTimeout, and the op then stays indeterminate.
func settle[Req, Resp any](ctx context.Context, w *Workload, cl *client.Client, a *attempts,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	until := clock.Real.Now().Add(w.cfg.SettleTimeout)
	for {
		cctx, cancel := w.opContext(ctx)
		resp, err := client.Call(cctx, cl, wrap(a, rpc), req)
		cancel()
		if settled(err, a) || ctx.Err() != nil || !clock.Real.Now().Before(until) {
			return resp, err
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// settled reports whether a write's outcome is known: it succeeded, the
// state machine refused it, or no attempt can have taken effect.
func settled(err error, a *attempts) bool {
	var op history.Op
	classify(&op, err, a, true)
	return op.Status != history.Info
}

// now is the history's clock: wall-clock nanoseconds, as metad stamps.
func now() int64 { return clock.Real.Now().UnixNano() }

// rng returns a seeded generator for client i.
func (w *Workload) rng(i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(i)*0x9e3779b97f4a7c15+1))
}

// alive reports whether ctx still has time: its deadline may have passed
// before its timer fired, and then every call would fail at once.
func alive(ctx context.Context) bool {
	if d, ok := ctx.Deadline(); ok && !clock.Real.Now().Before(d) {
		return false
	}
	return ctx.Err() == nil
}

// opContext bounds one operation by OpTimeout but not by ctx: stopping the
// workload stops new operations and lets those in flight finish, so none
// is left indeterminate by the stop and still in flight when the final
// read-back begins.
func (w *Workload) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), w.cfg.OpTimeout)
}
