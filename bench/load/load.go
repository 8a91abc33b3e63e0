package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metad/metad/clock"
)

// Config says how hard and how long to drive a system.
type Config struct {
	// Concurrency is the number of workers, each with one operation in
	// flight at a time. Default 1; range 1..4096.
	Concurrency int
	// Duration is how long operations are measured. Default 10s; range
	// 100ms..24h.
	Duration time.Duration
	// Warmup is how long operations run before measuring starts; their
	// results are discarded (connections, caches and the Go runtime settle
	// first). Default 0; range 0..1h.
	Warmup time.Duration
	// ProgressEvery is the interval between Progress calls. Default 1s;
	// range 10ms..1m.
	ProgressEvery time.Duration
	// Progress, if not nil, is called every ProgressEvery (from Run's own
	// goroutine, never concurrently) with the counts so far.
	Progress func(Progress)
	// Clock times the operations and the phases and paces Progress.
	// Default clock.Real: the driver measures real durations of real
	// servers; tests drive a fake one.
	Clock clock.Clock
}

// Bounds of Config, checked by Validate.
const (
	MaxConcurrency = 4096
	MinDuration    = 100 * time.Millisecond
	MaxDuration    = 24 * time.Hour
	MaxWarmup      = time.Hour
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	return c
}

// Validate reports every field out of range at once. Zero fields are
// checked as their defaults.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("load: Config.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Concurrency < 1 || c.Concurrency > MaxConcurrency {
		bad("Concurrency", "%d is outside 1..%d", c.Concurrency, MaxConcurrency)
	}
	if c.Duration < MinDuration || c.Duration > MaxDuration {
		bad("Duration", "%v is outside %v..%v", c.Duration, MinDuration, MaxDuration)
	}
	if c.Warmup < 0 || c.Warmup > MaxWarmup {
		bad("Warmup", "%v is outside 0..%v", c.Warmup, MaxWarmup)
	}
	if c.ProgressEvery < 10*time.Millisecond || c.ProgressEvery > time.Minute {
		bad("ProgressEvery", "%v is outside 10ms..1m", c.ProgressEvery)
	}
	return errors.Join(errs...)
}

// Op performs one operation as worker (0..Concurrency-1) and returns the
// kind of operation it was ("resolve", "put", ...), which groups latencies
// in the Result. Each worker calls its Op sequentially, so per-worker
// state indexed by worker needs no lock.
type Op func(ctx context.Context, worker int) (kind string, err error)

// Classify names the reason an operation failed, for the error table
// (e.g. client.Reason for metad, the gRPC code for etcd).
type Classify func(error) string

// Progress is a snapshot of a running test.
type Progress struct {
	// Warmup is true while results are still being discarded.
	Warmup bool
	// Elapsed is the time since the current phase began; Total is its
	// planned length.
	Elapsed, Total time.Duration
	// Ops and Errors are counts since the current phase began.
	Ops, Errors int64
	// Rate is successful operations per second over the last interval.
	Rate float64
}

// Run drives op from cfg.Concurrency workers for cfg.Warmup, then measures
// for cfg.Duration, and summarises the measured operations. Workers stop
// issuing operations when the time is up and finish the ones in flight;
// Elapsed runs until the last of them returned. If ctx ends first, Run
// returns what it measured so far together with ctx's error.
func Run(ctx context.Context, cfg Config, op Op, classify Classify) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.WithDefaults()
	r := &run{cfg: cfg, op: op, classify: classify, workers: make([]workerLog, cfg.Concurrency)}
	r.start = cfg.Clock.Now()
	r.measureFrom = r.start.Add(cfg.Warmup)
	r.stopAt = r.measureFrom.Add(cfg.Duration)

	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work(ctx, w)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	r.report(ctx, done)
	<-done // report returns early only when ctx ends; the workers follow.
	end := cfg.Clock.Now()
	return r.result(end), ctx.Err()
}

// run is one Run call.
type run struct {
	// Set before the workers start; read-only afterwards.
	cfg                        Config
	op                         Op
	classify                   Classify
	start, measureFrom, stopAt time.Time

	// workers[w] is written only by worker w, and read by Run after all
	// workers have been joined.
	workers []workerLog

	// Counters for progress, per phase: written by the workers, read by
	// Run's progress loop.
	warmOps, warmErrs, ops, errs atomic.Int64
}

// workerLog is what one worker measured.
type workerLog struct {
	latencies map[string][]time.Duration // by kind, successes only
	errors    map[string]int64           // by reason
}

// work is worker w's loop: one operation at a time until the time is up.
func (r *run) work(ctx context.Context, w int) {
	log := &r.workers[w]
	log.latencies = map[string][]time.Duration{}
	log.errors = map[string]int64{}
	warm := r.cfg.Warmup > 0
	for ctx.Err() == nil {
		begin := r.cfg.Clock.Now()
		if !begin.Before(r.stopAt) {
			return
		}
		if warm && !begin.Before(r.measureFrom) {
			warm = false
		}
		kind, err := r.op(ctx, w)
		took := clock.Since(r.cfg.Clock, begin)
		if warm {
			r.count(&r.warmOps, &r.warmErrs, err)
			continue
		}
		if ctx.Err() != nil && err != nil {
			return // interrupted: the failure is ours, not the server's
		}
		r.count(&r.ops, &r.errs, err)
		if err != nil {
			log.errors[r.reason(err)]++
			continue
		}
		log.latencies[kind] = append(log.latencies[kind], took)
	}
}

func (r *run) count(ops, errs *atomic.Int64, err error) {
	if err != nil {
		errs.Add(1)
	} else {
		ops.Add(1)
	}
}

func (r *run) reason(err error) string {
	if r.classify != nil {
		if s := r.classify(err); s != "" {
			return s
		}
	}
	return "OTHER"
}

// report calls cfg.Progress every interval until the workers are done or
// ctx ends.
func (r *run) report(ctx context.Context, done <-chan struct{}) {
	t := r.cfg.Clock.NewTimer(r.cfg.ProgressEvery)
	defer t.Stop()
	var lastOps int64
	last := r.cfg.Clock.Now()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case now := <-t.C():
			t.Reset(r.cfg.ProgressEvery)
			if r.cfg.Progress == nil {
				continue
			}
			p := Progress{Ops: r.ops.Load(), Errors: r.errs.Load(), Elapsed: now.Sub(r.measureFrom), Total: r.cfg.Duration}
			if now.Before(r.measureFrom) {
				p = Progress{Warmup: true, Ops: r.warmOps.Load(), Errors: r.warmErrs.Load(), Elapsed: now.Sub(r.start), Total: r.cfg.Warmup}
			}
			if p.Ops >= lastOps {
				p.Rate = float64(p.Ops-lastOps) / now.Sub(last).Seconds()
			}
			lastOps, last = p.Ops, now
			r.cfg.Progress(p)
		}
	}
}
