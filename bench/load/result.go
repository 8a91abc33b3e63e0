package load

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Result summarises the measured part of a run. Its JSON form is what
// `metad-bench -o json` and etcdload print, field for field.
type Result struct {
	Concurrency int `json:"concurrency"`
	// Elapsed runs from the start of measuring until the last worker
	// finished its last operation.
	Elapsed time.Duration `json:"-"`
	// ElapsedSeconds is Elapsed, for JSON.
	ElapsedSeconds float64 `json:"elapsed_s"`
	// Ops counts successful operations; Throughput is Ops per second of
	// Elapsed.
	Ops        int64   `json:"ops"`
	Throughput float64 `json:"throughput"`
	Latency    Latency `json:"latency"`
	// Errors counts failed operations by reason; they are not in Ops,
	// Throughput or Latency.
	Errors map[string]int64 `json:"errors"`
	// Kinds breaks Ops, Throughput and Latency down by operation kind,
	// when a run mixes several.
	Kinds map[string]KindResult `json:"kinds,omitempty"`
}

// KindResult is one operation kind's share of a run.
type KindResult struct {
	Ops        int64   `json:"ops"`
	Throughput float64 `json:"throughput"`
	Latency    Latency `json:"latency"`
}

// Latency summarises a set of latencies, in milliseconds for JSON.
// Percentiles are nearest-rank: P99 is the smallest latency that at least
// 99% of the operations did not exceed.
type Latency struct {
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// Summarize sorts latencies in place and summarises them. An empty set
// gives a zero Latency.
func Summarize(latencies []time.Duration) Latency {
	if len(latencies) == 0 {
		return Latency{}
	}
	slices.Sort(latencies)
	var sum time.Duration
	for _, d := range latencies {
		sum += d
	}
	return Latency{
		Mean: ms(sum / time.Duration(len(latencies))),
		P50:  ms(Percentile(latencies, 50)),
		P90:  ms(Percentile(latencies, 90)),
		P99:  ms(Percentile(latencies, 99)),
		P999: ms(Percentile(latencies, 99.9)),
		Max:  ms(latencies[len(latencies)-1]),
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted, which must be sorted ascending and not empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	// The epsilon keeps decimal percentiles exact: 99.9% of 1000 is rank
	// 999, although 99.9*1000/100 is a hair above 999 in binary.
	rank := int(math.Ceil(p*float64(len(sorted))/100 - 1e-9))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// result merges the workers' logs; every worker has been joined.
func (r *run) result(end time.Time) Result {
	elapsed := max(end.Sub(r.measureFrom), time.Nanosecond)
	res := Result{Concurrency: r.cfg.Concurrency, Elapsed: elapsed, ElapsedSeconds: elapsed.Seconds(), Errors: map[string]int64{}}
	byKind := map[string][]time.Duration{}
	var all []time.Duration
	for _, w := range r.workers {
		for kind, ls := range w.latencies {
			byKind[kind] = append(byKind[kind], ls...)
			all = append(all, ls...)
		}
		for reason, n := range w.errors {
			res.Errors[reason] += n
		}
	}
	res.Ops = int64(len(all))
	res.Throughput = float64(res.Ops) / elapsed.Seconds()
	res.Latency = Summarize(all)
	if len(byKind) > 1 {
		res.Kinds = map[string]KindResult{}
		for kind, ls := range byKind {
			res.Kinds[kind] = KindResult{Ops: int64(len(ls)), Throughput: float64(len(ls)) / elapsed.Seconds(), Latency: Summarize(ls)}
		}
	}
	return res
}

// SortedKeys returns m's keys in order, for stable printing.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
