package load

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metad/metad/internal/fakeclock"
)

func TestPercentileNearestRank(t *testing.T) {
	ten := make([]time.Duration, 10)
	for i := range ten {
		ten[i] = time.Duration(i+1) * time.Millisecond // 1ms..10ms
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{ten, 50, 5 * time.Millisecond},
		{ten, 90, 9 * time.Millisecond},
		{ten, 91, 10 * time.Millisecond},
		{ten, 99, 10 * time.Millisecond},
		{ten, 100, 10 * time.Millisecond},
		{ten, 0.1, 1 * time.Millisecond},
		{ten[:1], 99.9, 1 * time.Millisecond},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("Percentile(%d values, %v) = %v, want %v", len(tc.sorted), tc.p, got, tc.want)
		}
	}
}

func TestSummarizeSortsAndSummarises(t *testing.T) {
	var ls []time.Duration
	for i := 1000; i >= 1; i-- { // descending: Summarize must sort
		ls = append(ls, time.Duration(i)*time.Millisecond)
	}
	got := Summarize(ls)
	want := Latency{Mean: 500.5, P50: 500, P90: 900, P99: 990, P999: 999, Max: 1000}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if (Summarize(nil) != Latency{}) {
		t.Error("Summarize(nil) is not zero")
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	err := Config{Concurrency: -1, Duration: time.Millisecond, Warmup: -time.Second, ProgressEvery: time.Hour}.Validate()
	for _, field := range []string{"Concurrency", "Duration", "Warmup", "ProgressEvery"} {
		if err == nil || !strings.Contains(err.Error(), "Config."+field) {
			t.Errorf("Validate did not report %s: %v", field, err)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if _, err := Run(context.Background(), Config{Concurrency: MaxConcurrency + 1}, nil, nil); err == nil {
		t.Error("Run accepted an invalid config")
	}
}

// TestRunCountsEveryOperation checks that every completed call is either a
// measured success (in Ops and its kind) or a counted error, and that a
// worker never has two calls in flight.
func TestRunCountsEveryOperation(t *testing.T) {
	const workers = 4
	var calls atomic.Int64
	var inFlight [workers]atomic.Int32
	fc := fakeclock.New(time.Unix(0, 0))
	var progress atomic.Int64
	progressed := make(chan struct{})
	var once sync.Once
	cfg := Config{Concurrency: workers, Duration: 200 * time.Millisecond, ProgressEvery: 10 * time.Millisecond, Clock: fc,
		Progress: func(Progress) { progress.Add(1); once.Do(func() { close(progressed) }) }}
	op := func(ctx context.Context, w int) (string, error) {
		if inFlight[w].Add(1) != 1 {
			t.Errorf("worker %d has two operations in flight", w)
		}
		defer inFlight[w].Add(-1)
		n := calls.Add(1)
		if n == 1 {
			// The first call lasts one progress interval, and returns
			// once Progress has been called for it.
			fc.BlockUntil(1) // Run's progress timer
			fc.Advance(cfg.ProgressEvery)
			<-progressed
		}
		serve(fc)
		switch n % 3 {
		case 0:
			return "a", errors.New("boom")
		case 1:
			return "a", nil
		}
		return "b", nil
	}
	classify := func(err error) string { return strings.ToUpper(err.Error()) }
	res, err := Run(context.Background(), cfg, op, classify)
	if err != nil {
		t.Fatal(err)
	}
	if total := res.Ops + res.Errors["BOOM"]; total != calls.Load() || len(res.Errors) != 1 {
		t.Errorf("ops %d + errors %v != %d calls", res.Ops, res.Errors, calls.Load())
	}
	if res.Errors["BOOM"] == 0 || res.Kinds["a"].Ops == 0 || res.Kinds["b"].Ops == 0 {
		t.Errorf("want errors and both kinds, got %+v", res)
	}
	if res.Kinds["a"].Ops+res.Kinds["b"].Ops != res.Ops {
		t.Errorf("kinds %+v do not add up to %d ops", res.Kinds, res.Ops)
	}
	if res.Concurrency != workers || res.Elapsed < cfg.Duration || res.Latency.P50 < 1 {
		t.Errorf("implausible result %+v (each op takes 1ms)", res)
	}
	if progress.Load() == 0 {
		t.Error("Progress never called")
	}
}

func TestRunDiscardsWarmup(t *testing.T) {
	var calls atomic.Int64
	fc := fakeclock.New(time.Unix(0, 0))
	op := func(ctx context.Context, w int) (string, error) {
		calls.Add(1)
		serve(fc)
		return "op", nil
	}
	res, err := Run(context.Background(), Config{Concurrency: 2, Duration: 100 * time.Millisecond, Warmup: 200 * time.Millisecond, Clock: fc}, op, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each worker's first call starts inside the warm-up.
	if res.Ops == 0 || res.Ops > calls.Load()-2 {
		t.Errorf("%d measured ops of %d calls: the warm-up was not discarded", res.Ops, calls.Load())
	}
	if res.Kinds != nil {
		t.Errorf("one kind, yet Kinds = %v", res.Kinds)
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	fc := fakeclock.New(time.Unix(0, 0))
	op := func(ctx context.Context, w int) (string, error) {
		if calls.Add(1) == 10 {
			cancel()
		}
		serve(fc)
		return "op", ctx.Err()
	}
	res, err := Run(ctx, Config{Concurrency: 3, Duration: time.Hour, Clock: fc}, op, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(res.Errors) != 0 {
		t.Errorf("interrupted calls were counted as errors: %v", res.Errors)
	}
}

// serve stands for a server's reply time: the runner measures durations
// (Latency, Elapsed) on its clock, so the fake operation takes 1ms of the
// test's.
func serve(fc *fakeclock.Clock) { fc.Advance(time.Millisecond) }
