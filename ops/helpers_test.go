package ops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ack is one acknowledged append: the committed end it produced, and when.
type ack struct {
	end uint64
	at  time.Time
}

// load appends one offset at a time from a goroutine until stopped, the
// way a broker would through failovers and restarts.
type load struct {
	t    testing.TB
	w    *proc.Writer
	stop chan struct{}
	done chan struct{}

	mu   sync.Mutex // guards acks and bad
	acks []ack
	bad  []error // failures a client must never see: definite and not retryable
}

func startLoad(t testing.TB, w *proc.Writer) *load {
	l := &load{t: t, w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	t.Cleanup(func() { l.finish() })
	return l
}

func (l *load) run() {
	defer close(l.done)
	for {
		select {
		case <-l.stop:
			l.settlePending()
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := l.w.Append(ctx, 1)
		cancel()
		l.mu.Lock()
		switch {
		case err == nil:
			l.acks = append(l.acks, ack{end: l.w.End, at: time.Now()})
		case !acceptable(err):
			l.bad = append(l.bad, err)
		}
		l.mu.Unlock()
		if err != nil {
			time.Sleep(20 * time.Millisecond) // back-off of a client retrying a write the servers (real processes) refused
		}
	}
}

// acceptable: what a client may see while servers restart or fail over:
// retryable failures, and indeterminate ones (retried with the same id).
func acceptable(err error) bool {
	e, ok := client.AsError(err)
	if !ok {
		return errors.Is(err, context.DeadlineExceeded)
	}
	return e.Retryable() || !e.Definite || e.Code == codes.DeadlineExceeded || e.Code == codes.Unavailable
}

// settlePending retries an append of unknown outcome until it is known, so
// that the writer's end is the stream's committed end.
func (l *load) settlePending() {
	deadline := time.Now().Add(30 * time.Second)
	for l.w.Pending() && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := l.w.Append(ctx, 1)
		cancel()
		l.mu.Lock()
		if err == nil {
			l.acks = append(l.acks, ack{end: l.w.End, at: time.Now()})
		} else if !acceptable(err) {
			l.bad = append(l.bad, err)
		}
		l.mu.Unlock()
	}
	if l.w.Pending() {
		l.t.Errorf("an append stayed indeterminate for 30s")
	}
}

// finish stops the load and returns the acknowledged appends.
func (l *load) finish() []ack {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ack(nil), l.acks...)
}

// acked returns the number of appends acknowledged so far and the last end.
func (l *load) acked() (int, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.acks) == 0 {
		return 0, 0
	}
	return len(l.acks), l.acks[len(l.acks)-1].end
}

func (l *load) failures() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.bad...)
}

// waitAcks waits until n more appends are acknowledged.
func (l *load) waitAcks(c *proc.Cluster, n int) {
	start, _ := l.acked()
	c.WaitFor(fmt.Sprintf("%d more acknowledged appends", n), 30*time.Second, func() bool {
		got, _ := l.acked()
		return got >= start+n
	})
}

// gen0Records lists a stream's COMMITTED generation-0 index records through
// server i, all pages.
func gen0Records(t testing.TB, c *proc.Cluster, i int, stream uint64) []*metadpb.StoredIndexRecord {
	t.Helper()
	cl := c.Client(i)
	var out []*metadpb.StoredIndexRecord
	from := uint64(0)
	for {
		resp, err := client.Call(ctxT(t, 10*time.Second), cl, cl.Metad.ListIndex, &metadpb.ListIndexRequest{
			StreamId: stream, View: metadpb.View_COMMITTED, Generation: 0, From: from, Limit: 1000})
		if err != nil {
			t.Fatalf("list index through %d: %v", i, err)
		}
		out = append(out, resp.Records...)
		if len(resp.Records) == 0 {
			return out
		}
		from = resp.Records[len(resp.Records)-1].Record.Range.End
	}
}

// checkContiguous checks that records cover [0, end) without gap.
func checkContiguous(t testing.TB, recs []*metadpb.StoredIndexRecord, end uint64) {
	t.Helper()
	next := uint64(0)
	for _, r := range recs {
		if r.Record.Range.Start != next {
			t.Fatalf("index records: gap or overlap at %d (record starts at %d)", next, r.Record.Range.Start)
		}
		next = r.Record.Range.End
	}
	if next != end {
		t.Fatalf("index records end at %d, committed end %d", next, end)
	}
}

// formed waits until every running server reports one leader and n voters.
func formed(t testing.TB, c *proc.Cluster, n int) {
	t.Helper()
	c.WaitFor(fmt.Sprintf("one leader and %d voters", n), 30*time.Second, func() bool {
		for i := range c.Nodes {
			if !c.Running(i) {
				continue
			}
			st, err := c.Status(i)
			if err != nil || st.LeaderId == "" || st.Voters != uint32(n) {
				return false
			}
			for _, nd := range st.Nodes {
				if nd.State == "UNREACHABLE" {
					return false
				}
			}
		}
		return true
	})
}

// cli runs the metad binary and returns its stdout+stderr and exit code.
func cli(t testing.TB, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(proc.Binary(t), args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("metad %v: %v", args, err)
	}
	return string(out), code
}

// mustCLI runs the binary and fails the test unless it exits 0.
func mustCLI(t testing.TB, args ...string) string {
	t.Helper()
	out, code := cli(t, "", args...)
	if code != 0 {
		t.Fatalf("metad %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// scrape fetches /metrics from addr: series ("name{labels}") to value.
func scrape(t testing.TB, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", addr, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape %s: bad line %q", addr, line)
		}
		out[line[:i]] = v
	}
	return out
}

// series sums the values of every series of metric name whose labels
// contain each of the given `key="value"` pairs; ok is false if none.
func series(m map[string]float64, name string, labels ...string) (sum float64, ok bool) {
	for k, v := range m {
		base, lbls, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(lbls, l)
		}
		if match {
			sum, ok = sum+v, true
		}
	}
	return sum, ok
}

func httpStatus(t testing.TB, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// finishAndCheckAcks stops the load after ten more acknowledgements and
// checks what a client may rely on: no failure it must not see, every
// acknowledged append exactly once in order, and every server holding all
// of them with their index records. It returns how many were acknowledged.
func finishAndCheckAcks(t *testing.T, c *proc.Cluster, l *load, w *proc.Writer) int {
	t.Helper()
	l.waitAcks(c, 10)
	acks := l.finish()
	if bad := l.failures(); len(bad) > 0 {
		t.Fatalf("the writer saw failures a client must not see: %v", bad)
	}
	last := acks[len(acks)-1].end
	for k := 1; k < len(acks); k++ {
		if acks[k].end != acks[k-1].end+1 {
			t.Fatalf("acknowledged ends %d then %d: an append was lost or doubled", acks[k-1].end, acks[k].end)
		}
	}
	for i := range c.Nodes {
		s, err := c.Describe(i, w.Stream)
		if err != nil || s.CommittedEnd != last {
			t.Fatalf("%s: committed end %v (%v), last acknowledged %d", c.Nodes[i].ID, s, err, last)
		}
		checkContiguous(t, gen0Records(t, c, i, w.Stream), last)
	}
	return len(acks)
}
