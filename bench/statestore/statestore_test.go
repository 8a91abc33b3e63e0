package statestore

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// root holds every store the benchmarks load; TestMain removes it.
var root string

func TestMain(m *testing.M) {
	if dir := os.Getenv("STATESTORE_CHILD_DIR"); dir != "" {
		os.Exit(memoryChild(dir))
	}
	var err error
	root, err = os.MkdirTemp(os.Getenv("STATESTORE_DIR"), "statestore-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	if err := os.RemoveAll(root); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// sizes are the preloaded record counts: STATESTORE_SIZES, comma-separated
// (default 100000,1000000).
func sizes(b *testing.B) []int {
	spec := os.Getenv("STATESTORE_SIZES")
	if spec == "" {
		spec = "100000,1000000"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < perStream {
			b.Fatalf("STATESTORE_SIZES: %q is not a record count >= %d", f, perStream)
		}
		out = append(out, n)
	}
	return out
}

func sizeName(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

// preloaded is a loaded store on disk, closed, shared by the benchmarks of
// one process. Applies add records past the loaded ones, so later
// benchmarks see a few more records than n.
type preloaded struct {
	dir  string
	load time.Duration
	disk int64 // bytes after load and compaction
}

var (
	preloadMu sync.Mutex
	loadedSet = map[string]*preloaded{}
)

func preload(b *testing.B, kind string, n int) *preloaded {
	preloadMu.Lock()
	defer preloadMu.Unlock()
	key := kind + "/" + sizeName(n)
	if p, ok := loadedSet[key]; ok {
		return p
	}
	dir := filepath.Join(root, strings.ReplaceAll(key, "/", "-"))
	p, err := load(kind, dir, n)
	if err != nil {
		b.Fatalf("load %s: %v", key, err)
	}
	b.Logf("loaded %s in %v: %.1f disk bytes/record", key, p.load.Round(time.Millisecond), float64(p.disk)/float64(n))
	loadedSet[key] = p
	return p
}

// load writes n records in key order in batches of 10,000, as applies
// (bbolt with its default fill), then compacts.
func load(kind, dir string, n int) (*preloaded, error) {
	start := time.Now()
	s, err := openStore(kind, dir, 0)
	if err != nil {
		return nil, err
	}
	var batch []rec
	var applied uint64
	err = newDataset(n).each(func(r rec) error {
		applied++
		batch = append(batch, rec{key: bytes.Clone(r.key), value: bytes.Clone(r.value)})
		if len(batch) < 10000 {
			return nil
		}
		err := s.apply(batch, applied)
		batch = batch[:0]
		return err
	})
	if err == nil && len(batch) > 0 {
		err = s.apply(batch, applied)
	}
	if err == nil {
		err = s.compact()
	}
	if err == nil {
		err = durable(s)
	}
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	p := &preloaded{dir: dir, load: time.Since(start)}
	p.disk, err = diskBytes(dir)
	return p, err
}

func open(b *testing.B, kind, dir string, cache int64) store {
	s, err := openStore(kind, dir, cache)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.close(); err != nil {
			b.Error(err)
		}
	})
	return s
}

// BenchmarkLoad loads a fresh store per iteration: the load time, and the
// disk bytes per record after compaction. Run with -benchtime 1x.
func BenchmarkLoad(b *testing.B) {
	for _, n := range sizes(b) {
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("store=%s/n=%s", kind, sizeName(n)), func(b *testing.B) {
				var last *preloaded
				for i := range b.N {
					p, err := load(kind, filepath.Join(root, fmt.Sprintf("load-%s-%d-%d", kind, n, i)), n)
					if err != nil {
						b.Fatal(err)
					}
					last = p
					if err := os.RemoveAll(p.dir); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(last.disk)/float64(n), "disk-B/record")
				b.ReportMetric(float64(n)/last.load.Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkApply is one Apply: a batch of `batch` new records plus the
// applied index, committed without fsync.
func BenchmarkApply(b *testing.B) {
	for _, n := range sizes(b) {
		for _, batch := range []int{1, 4, 64} {
			for _, kind := range kinds {
				b.Run(fmt.Sprintf("n=%s/batch=%d/store=%s", sizeName(n), batch, kind), func(b *testing.B) {
					p := preload(b, kind, n)
					s := open(b, kind, p.dir, 0)
					a := newAppender(newDataset(n), uint64(b.N))
					batches := make([][]rec, b.N)
					applied := make([]uint64, b.N)
					for i := range batches {
						batches[i], applied[i] = a.batch(batch)
					}
					b.ResetTimer()
					for i := range b.N {
						if err := s.apply(batches[i], applied[i]); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
				})
			}
		}
	}
}

// BenchmarkResolve is one resolve: seek to the record of one stream's view
// that covers a random offset, on a random stream. The cache is pebble's
// block cache; bbolt reads through mmap, so its cache is the OS page
// cache (all of the file, on this machine) whatever the flag says.
func BenchmarkResolve(b *testing.B) {
	for _, n := range sizes(b) {
		for _, cache := range []int64{8 << 20, 256 << 20} {
			for _, kind := range kinds {
				if kind == "pebble-nowal" {
					continue // the same reads as pebble
				}
				b.Run(fmt.Sprintf("n=%s/cache=%dMiB/store=%s", sizeName(n), cache>>20, kind), func(b *testing.B) {
					p := preload(b, kind, n)
					s := open(b, kind, p.dir, cache)
					d := newDataset(n)
					rnd := rand.New(rand.NewPCG(1, 2))
					warm(b, s, d)
					hits, misses := cacheCounts(s)
					lat := make([]time.Duration, b.N)
					b.ResetTimer()
					for i := range b.N {
						stream, off := d.randomOffset(rnd)
						t0 := time.Now()
						ok, err := s.resolve(stream, off)
						lat[i] = time.Since(t0)
						if err != nil || !ok {
							b.Fatalf("resolve %d@%d: found %v, %v", stream, off, ok, err)
						}
					}
					b.StopTimer()
					reportLatency(b, "", lat)
					if h, m := cacheCounts(s); h+m > hits+misses {
						b.ReportMetric(float64(h-hits)/float64(h+m-hits-misses), "cache-hit-ratio")
					}
				})
			}
		}
	}
}

// warm resolves 200,000 random offsets (another seed than the measured
// ones), so that pebble's block cache and the page cache bbolt reads
// through hold what they will hold in steady state.
func warm(b *testing.B, s store, d dataset) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		stream, off := d.randomOffset(rnd)
		if _, err := s.resolve(stream, off); err != nil {
			b.Fatal(err)
		}
	}
}

// cacheCounts is pebble's block cache hits and misses so far (0, 0 for
// bbolt, which has no cache of its own).
func cacheCounts(s store) (hits, misses int64) {
	if ps, ok := s.(*pebbleStore); ok {
		m := ps.db.Metrics().BlockCache
		return m.Hits, m.Misses
	}
	return 0, 0
}

func reportLatency(b *testing.B, prefix string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), prefix+"p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), prefix+"p99-µs")
}

// writer applies one record every millisecond and records each apply's
// latency until stop is closed or, if limit is not 0, limit records are
// applied: the steady commit load a snapshot stream must not disturb.
func writer(s store, a *appender, stop <-chan struct{}, limit int) (<-chan []time.Duration, <-chan error) {
	out := make(chan []time.Duration, 1)
	errc := make(chan error, 1)
	go func() {
		var lat []time.Duration
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for limit == 0 || len(lat) < limit {
			select {
			case <-stop:
				out <- lat
				errc <- nil
				return
			case <-t.C:
			}
			recs, applied := a.batch(1)
			t0 := time.Now()
			if err := s.apply(recs, applied); err != nil {
				out <- lat
				errc <- err
				return
			}
			lat = append(lat, time.Since(t0))
		}
		out <- lat
		errc <- nil
	}()
	return out, errc
}

// runWriter runs the writer for n applies (n ms of steady load) and
// returns their latencies.
func runWriter(b *testing.B, s store, a *appender, n int) []time.Duration {
	out, errc := writer(s, a, nil, n)
	lat := <-out
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return lat
}

// countingDiscard is where a streamed snapshot goes: a follower's socket
// stands in for nothing but the bytes.
type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkSnapshot is one snapshot streamed in full from a consistent
// point while the writer applies: stream throughput, the writer's apply
// latency without (base-) and with (during-) the stream, the cost of
// taking the point, and for bbolt the file's growth while the read
// transaction pins old pages.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range sizes(b) {
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("n=%s/store=%s", sizeName(n), kind), func(b *testing.B) {
				p := preload(b, kind, n)
				s := open(b, kind, p.dir, 0)
				a := newAppender(newDataset(n), 99)
				// Reported after the timed loop: ResetTimer drops metrics.
				point := pointCost(b, s)
				var checkpoint time.Duration
				if ps, ok := s.(*pebbleStore); ok {
					checkpoint = checkpointCost(b, ps)
				}
				base := runWriter(b, s, a, 3000) // 3 s of load
				before, err := diskBytes(p.dir)
				if err != nil {
					b.Fatal(err)
				}
				stop := make(chan struct{})
				out, errc := writer(s, a, stop, 0)
				var streamed int64
				b.ResetTimer()
				for range b.N {
					sn, err := s.snapshot()
					if err != nil {
						b.Fatal(err)
					}
					var w countingDiscard
					if _, err := sn.stream(&w); err != nil {
						b.Fatal(err)
					}
					if err := sn.release(); err != nil {
						b.Fatal(err)
					}
					streamed += w.n
				}
				b.StopTimer()
				close(stop)
				during := <-out
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				after, err := diskBytes(p.dir)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(streamed)/b.Elapsed().Seconds()/1e6, "stream-MB/s")
				reportLatency(b, "base-", base)
				reportLatency(b, "during-", during)
				b.ReportMetric(float64(len(during)), "during-applies")
				b.ReportMetric(float64(point.Nanoseconds()), "point-ns")
				if checkpoint > 0 {
					b.ReportMetric(checkpoint.Seconds()*1e3, "checkpoint-ms")
				}
				if kind == "bbolt" {
					b.ReportMetric(float64(after-before)/1e6, "growth-MB")
				}
			})
		}
	}
}

// pointCost is the mean time to take and release a consistent point.
func pointCost(b *testing.B, s store) time.Duration {
	const n = 1000
	t0 := time.Now()
	for range n {
		sn, err := s.snapshot()
		if err != nil {
			b.Fatal(err)
		}
		if err := sn.release(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(t0) / n
}

// checkpointCost is the time of a pebble checkpoint (flush, hard links,
// a new manifest): the on-disk form of a point, which survives a restart.
func checkpointCost(b *testing.B, s *pebbleStore) time.Duration {
	dir := filepath.Join(b.TempDir(), "checkpoint")
	t0 := time.Now()
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// BenchmarkInstall builds a store of the same kind from a streamed
// snapshot and swaps it in (install): records/s and the disk bytes of a
// store built from sorted input.
func BenchmarkInstall(b *testing.B) {
	for _, n := range sizes(b) {
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("n=%s/store=%s", sizeName(n), kind), func(b *testing.B) {
				p := preload(b, kind, n)
				var buf bytes.Buffer
				func() {
					s := open(b, kind, p.dir, 0)
					sn, err := s.snapshot()
					if err != nil {
						b.Fatal(err)
					}
					defer sn.release()
					if _, err := sn.stream(&buf); err != nil {
						b.Fatal(err)
					}
				}()
				dir := filepath.Join(b.TempDir(), "state")
				var records int
				b.ResetTimer()
				for range b.N {
					var err error
					if records, err = install(kind, dir, bytes.NewReader(buf.Bytes())); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				disk, err := diskBytes(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(float64(disk)/float64(records), "disk-B/record")
			})
		}
	}
}

// BenchmarkMemory opens a preloaded store in a fresh process, resolves
// 200,000 random offsets to warm it, and reports that process's Go heap
// and VmRSS: what the store costs in memory, free of this process's
// loading garbage. VmRSS includes bbolt's mmapped file pages it touched.
func BenchmarkMemory(b *testing.B) {
	for _, n := range sizes(b) {
		for _, cache := range []int64{1 << 20, 8 << 20, 256 << 20} {
			for _, kind := range []string{"pebble", "bbolt"} {
				if kind == "bbolt" && cache != 8<<20 {
					continue // no cache to size
				}
				b.Run(fmt.Sprintf("n=%s/cache=%dMiB/store=%s", sizeName(n), cache>>20, kind), func(b *testing.B) {
					p := preload(b, kind, n)
					for range b.N {
						cmd := exec.Command(os.Args[0])
						cmd.Env = append(os.Environ(), "STATESTORE_CHILD_DIR="+p.dir,
							"STATESTORE_CHILD_KIND="+kind, fmt.Sprintf("STATESTORE_CHILD_N=%d", n),
							fmt.Sprintf("STATESTORE_CHILD_CACHE=%d", cache))
						out, err := cmd.CombinedOutput()
						if err != nil {
							b.Fatalf("child: %v\n%s", err, out)
						}
						var heap, rss int64
						if _, err := fmt.Sscanf(string(out), "heap=%d rss=%d", &heap, &rss); err != nil {
							b.Fatalf("child output %q: %v", out, err)
						}
						b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
						b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
					}
				})
			}
		}
	}
}

// memoryChild is BenchmarkMemory's child process.
func memoryChild(dir string) int {
	kind := os.Getenv("STATESTORE_CHILD_KIND")
	n, err1 := strconv.Atoi(os.Getenv("STATESTORE_CHILD_N"))
	cache, err2 := strconv.ParseInt(os.Getenv("STATESTORE_CHILD_CACHE"), 10, 64)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "STATESTORE_CHILD_N, STATESTORE_CHILD_CACHE: want integers")
		return 2
	}
	s, err := openStore(kind, dir, cache)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d := newDataset(n)
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 200_000 {
		stream, off := d.randomOffset(rnd)
		if _, err := s.resolve(stream, off); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("heap=%d rss=%d\n", ms.HeapInuse, vmRSS())
	if err := s.close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// vmRSS is this process's VmRSS in bytes, from /proc/self/status.
func vmRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}
