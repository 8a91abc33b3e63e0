package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// BenchmarkWatchFanout measures what watchers cost the leader: 1,000
// streams appended to at about 1,000 appends/s on a 3-node cluster, first
// without watchers, then with 10 watchers per stream spread over the
// members. It reports the leader's CPU per append in both phases (from its
// process_cpu_seconds_total), the append latency (sent → acknowledged) and
// the delivery latency (sent → event received by a watcher), p50 and p99.
// One run is the measurement: go test -run xxx -bench WatchFanout
// -benchtime 1x ./integration/ (METAD_WATCH_BENCH_SECONDS per phase,
// default 20).
func BenchmarkWatchFanout(b *testing.B) {
	const streams, watchersPerStream, rate = 1000, 10, 1000
	phase := 20 * time.Second
	if s, err := strconv.Atoi(os.Getenv("METAD_WATCH_BENCH_SECONDS")); err == nil && s > 0 {
		phase = time.Duration(s) * time.Second
	}
	c := proc.New(b, 3, "--watch-max-watchers", "20000", "--max-timeout", "10m")
	c.StartAll()
	leader := awaitLeader(c, 60*time.Second)
	cl := newBenchClient(b, c)
	ids, obj := createBenchStreams(b, cl, streams)
	load := &appendLoad{cl: cl, ids: ids, obj: obj, ends: make([]uint64, len(ids))}

	cpu0 := cpuSeconds(b, c, leader)
	n0 := load.run(b, rate, phase)
	cpu1 := cpuSeconds(b, c, leader)
	base := (cpu1 - cpu0) / float64(n0)
	b.Logf("no watchers: %d appends in %s (%.0f/s), leader CPU %.1f µs/append, append latency p50 %s p99 %s",
		n0, phase, float64(n0)/phase.Seconds(), base*1e6, load.latency(50), load.latency(99))

	// METAD_WATCH_BENCH_ON=leader puts every watcher on the leader (the
	// worst case for it); by default they are balanced over the members.
	watchAt := []int{0, 1, 2}
	if os.Getenv("METAD_WATCH_BENCH_ON") == "leader" {
		watchAt = []int{leader}
	}
	deliveries := startBenchWatchers(b, c, load, ids, watchersPerStream, watchAt)
	load.resetLatency()
	cpu2 := cpuSeconds(b, c, leader)
	n1 := load.run(b, rate, phase)
	cpu3 := cpuSeconds(b, c, leader)
	with := (cpu3 - cpu2) / float64(n1)
	p50, p99 := deliveries.percentile(50), deliveries.percentile(99)
	b.Logf("%d watchers on members %v: %d appends in %s (%.0f/s), leader CPU %.1f µs/append (%+.0f%%), append latency p50 %s p99 %s, delivery p50 %s p99 %s (%d events)",
		streams*watchersPerStream, watchAt, n1, phase, float64(n1)/phase.Seconds(), with*1e6, 100*(with-base)/base,
		load.latency(50), load.latency(99), p50, p99, deliveries.count())
	b.ReportMetric(base*1e6, "leader-µs/append-0w")
	b.ReportMetric(with*1e6, "leader-µs/append-10kw")
	b.ReportMetric(float64(p99.Microseconds()), "delivery-p99-µs")
}

// newBenchClient is a client of the given members (default: all).
func newBenchClient(b *testing.B, c *proc.Cluster, members ...int) *client.Client {
	if len(members) == 0 {
		members = []int{0, 1, 2}
	}
	var addrs []string
	for _, i := range members {
		addrs = append(addrs, c.Nodes[i].GRPC)
	}
	cl, err := client.New(client.Config{Addrs: addrs, Timeout: 30 * time.Second, TLS: c.ClientTLS})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	return cl
}

// createBenchStreams creates and opens the streams, and registers the one
// (synthetic) object every append references.
func createBenchStreams(b *testing.B, cl *client.Client, n int) ([]uint64, *metadpb.ObjectRef) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	obj := &metadpb.ObjectRef{Key: "bench/object", Identity: "sha256:bench"}
	if _, err := client.Call(ctx, cl, cl.Metad.RegisterObject, &metadpb.RegisterObjectRequest{Object: obj, Size: 1 << 40, RequestId: client.NewRequestID()}); err != nil {
		b.Fatal(err)
	}
	ids := make([]uint64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 32 {
				s, err := client.Call(ctx, cl, cl.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: fmt.Sprintf("watch-bench-%d", i), RequestId: client.NewRequestID()})
				if err == nil {
					_, err = client.Call(ctx, cl, cl.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: s.StreamId, RequestId: client.NewRequestID()})
				}
				if err != nil {
					errs <- err
					return
				}
				ids[i] = s.StreamId
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return ids, obj
}

// appendLoad appends one offset at a time to the streams in turn, paced to
// a total rate, and remembers when each append was sent.
type appendLoad struct {
	cl   *client.Client
	ids  []uint64
	obj  *metadpb.ObjectRef
	ends []uint64 // per stream index; each stream is owned by one worker

	sent sync.Map // "stream/end" → time the append was sent

	mu        sync.Mutex
	latencies []time.Duration
}

func (l *appendLoad) run(b *testing.B, rate int, d time.Duration) int {
	const workers = 64
	var done atomic.Int64
	interval := time.Duration(workers) * time.Second / time.Duration(rate)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var own []int // each worker owns the streams ≡ w mod workers
			for i := w; i < len(l.ids); i += workers {
				own = append(own, i)
			}
			next := start.Add(time.Duration(w) * interval / workers)
			for j := 0; time.Since(start) < d; j++ {
				time.Sleep(time.Until(next)) // pacing: the rate of appends offered to the servers (real processes)
				next = next.Add(interval)
				i := own[j%len(own)]
				if err := l.appendOne(i); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(done.Load())
}

func (l *appendLoad) appendOne(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end := l.ends[i]
	sent := time.Now()
	l.sent.Store(fmt.Sprintf("%d/%d", l.ids[i], end+1), sent)
	_, err := client.Call(ctx, l.cl, l.cl.Metad.CommitAppend, &metadpb.CommitAppendRequest{
		StreamId: l.ids[i], WriterEpoch: 1, ExpectedStart: end, End: end + 1, Object: l.obj,
		Bytes: &metadpb.ByteRange{Offset: end, Length: 1}, RequestId: client.NewRequestID(),
	})
	if err != nil {
		return err
	}
	l.ends[i] = end + 1
	l.mu.Lock()
	l.latencies = append(l.latencies, time.Since(sent))
	l.mu.Unlock()
	return nil
}

func (l *appendLoad) resetLatency() {
	l.mu.Lock()
	l.latencies = nil
	l.mu.Unlock()
}

func (l *appendLoad) latency(p int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentile(l.latencies, p)
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

type deliveryLog struct {
	mu sync.Mutex
	ds []time.Duration
}

func (d *deliveryLog) add(x time.Duration) {
	d.mu.Lock()
	d.ds = append(d.ds, x)
	d.mu.Unlock()
}

func (d *deliveryLog) percentile(p int) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return percentile(d.ds, p)
}

func (d *deliveryLog) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ds)
}

// startBenchWatchers starts per watchers for every stream, on per clients
// of the members given, and waits until all are registered.
func startBenchWatchers(b *testing.B, c *proc.Cluster, load *appendLoad, ids []uint64, per int, members []int) *deliveryLog {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	log := &deliveryLog{}
	clients := make([]*client.Client, per)
	for i := range clients {
		clients[i] = newBenchClient(b, c, members...)
	}
	for _, id := range ids {
		for k := range per {
			go func() {
				for ev, err := range clients[k].Watch(ctx, id, 0) {
					if err != nil {
						if ctx.Err() == nil {
							b.Errorf("watch %d: %v", id, err)
						}
						return
					}
					if ev.Kind != metadpb.WatchEventKind_WATCH_APPENDED {
						continue
					}
					if t, ok := load.sent.Load(fmt.Sprintf("%d/%d", id, ev.CommittedEnd)); ok {
						log.add(time.Since(t.(time.Time)))
					}
				}
			}()
		}
	}
	want := len(ids) * per
	c.WaitFor(fmt.Sprintf("%d watchers registered", want), 5*time.Minute, func() bool {
		total := 0
		for i := range c.Nodes {
			total += watchersOn(c, i)
		}
		return total >= want
	})
	return log
}

// cpuSeconds reads process_cpu_seconds_total from server i.
func cpuSeconds(b *testing.B, c *proc.Cluster, i int) float64 {
	resp, err := http.Get("http://" + c.Nodes[i].HTTP + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
	}
	b.Fatal("no process_cpu_seconds_total")
	return 0
}
