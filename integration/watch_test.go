package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// recorder collects one watcher's events.
type recorder struct {
	mu     sync.Mutex
	events []*metadpb.WatchEvent
	err    error
	done   chan struct{}
}

func recordWatch(ctx context.Context, cl *client.Client, stream, from uint64) *recorder {
	r := &recorder{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev, err := range cl.Watch(ctx, stream, from) {
			r.mu.Lock()
			if err != nil {
				r.err = err
			} else {
				r.events = append(r.events, ev)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// appends returns the APPENDED events seen so far.
func (r *recorder) appends() []*metadpb.WatchEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*metadpb.WatchEvent
	for _, ev := range r.events {
		if ev.Kind == metadpb.WatchEventKind_WATCH_APPENDED {
			out = append(out, ev)
		}
	}
	return out
}

func (r *recorder) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// newClient is a client of the given servers whose calls are balanced
// over them (Watch always is).
func newClient(t *testing.T, c *proc.Cluster, idx ...int) *client.Client {
	var addrs []string
	for _, i := range idx {
		addrs = append(addrs, c.Nodes[i].GRPC)
	}
	cl, err := client.New(client.Config{Addrs: addrs, Timeout: 10 * time.Second, TLS: c.ClientTLS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestWatchFollowsEveryAppendThroughFailures: a watcher on a follower
// (talking to that follower only) and one balanced over all members see
// every append of a concurrent writer, in order, while the leader is killed
// and restarted and the watched follower is killed and restarted; what they
// saw equals the committed history (DescribeStream, ListEvidence).
func TestWatchFollowsEveryAppendThroughFailures(t *testing.T) {
	// History enough for the whole test: the follower-only watcher resumes
	// on the restarted follower after the appends made while it was down
	// (the ring's bound is TestWatchResumeAndCompaction's subject).
	c := proc.New(t, 3, "--watch-history", "100000")
	c.StartAll()
	formed(t, c, 3)
	leader := awaitLeader(c, 30*time.Second)
	follower := (leader + 1) % 3
	w := proc.NewWriter(t, c.Client(), "watched")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	onFollower := recordWatch(ctx, newClient(t, c, follower), w.Stream, 0)
	balanced := recordWatch(ctx, newClient(t, c, 0, 1, 2), w.Stream, 0)

	var wmu sync.Mutex // guards w.End for the checks below
	writerDone := make(chan struct{})
	stopWriter := make(chan struct{})
	go func() {
		defer close(writerDone)
		for n := uint64(1); ; n = n%5 + 1 {
			select {
			case <-stopWriter:
				return
			default:
			}
			actx, acancel := context.WithTimeout(ctx, 10*time.Second)
			wmu.Lock()
			_ = w.Append(actx, n) // a failure is retried (same request ids) by the next Append
			wmu.Unlock()
			acancel()
		}
	}()
	seen := func(r *recorder, n int) func() bool {
		return func() bool {
			if err := r.failed(); err != nil {
				t.Fatalf("watch ended: %v", err)
			}
			return len(r.appends()) >= n
		}
	}
	progress := func(what string) {
		t.Helper()
		n := len(onFollower.appends()) + 10
		c.WaitFor(what+": the follower's watcher sees 10 more appends", 60*time.Second, seen(onFollower, n))
		m := len(balanced.appends()) + 10
		c.WaitFor(what+": the balanced watcher sees 10 more appends", 60*time.Second, seen(balanced, m))
	}
	progress("at first")
	c.Kill(leader)
	progress("leader killed")
	c.Start(leader)
	progress("old leader restarted")
	c.Kill(follower)
	c.Start(follower)
	progress("watched follower restarted")

	close(stopWriter)
	<-writerDone
	wmu.Lock()
	for w.Pending() { // settle the last append's outcome
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		if err := w.Append(actx, 1); err != nil {
			t.Logf("settling the last append: %v", err)
		}
		acancel()
	}
	wmu.Unlock()

	cl := c.Client()
	final, err := c.Describe(leader, w.Stream)
	if err != nil {
		t.Fatal(err)
	}
	history := listEvidence(t, cl, w.Stream)
	if len(history) == 0 || history[len(history)-1].Range.End != final.CommittedEnd {
		t.Fatalf("evidence ends at %v, DescribeStream at %d", history[len(history)-1].Range, final.CommittedEnd)
	}
	for name, r := range map[string]*recorder{"follower's": onFollower, "balanced": balanced} {
		c.WaitFor(name+" watcher at the final committed end", 60*time.Second, func() bool {
			evs := r.appends()
			return len(evs) > 0 && evs[len(evs)-1].CommittedEnd == final.CommittedEnd
		})
		checkAgainstHistory(t, name, r, history, final)
	}
	t.Logf("%d appends committed, watched through a leader kill and a follower restart", len(history))
}

// checkAgainstHistory: the watcher's first event is WATCH_STARTED, and its
// appends are exactly the committed history after that point, in order,
// with the same ranges, objects, bytes and versions.
func checkAgainstHistory(t *testing.T, name string, r *recorder, history []*metadpb.Evidence, final *metadpb.Stream) {
	t.Helper()
	r.mu.Lock()
	events := append([]*metadpb.WatchEvent(nil), r.events...)
	r.mu.Unlock()
	if len(events) == 0 || events[0].Kind != metadpb.WatchEventKind_WATCH_STARTED {
		t.Fatalf("%s watcher: first event %v, want WATCH_STARTED", name, events)
	}
	start := events[0].CommittedEnd
	var want []*metadpb.Evidence
	for _, e := range history {
		if e.Range.Start >= start {
			want = append(want, e)
		}
	}
	var got []*metadpb.WatchEvent
	last := events[0].Version
	for _, ev := range events[1:] {
		if ev.Kind == metadpb.WatchEventKind_WATCH_STARTED {
			t.Fatalf("%s watcher: a second WATCH_STARTED %v", name, ev)
		}
		if ev.Version <= last {
			t.Fatalf("%s watcher: version %d after %d (duplicate or out of order)", name, ev.Version, last)
		}
		last = ev.Version
		if ev.Kind != metadpb.WatchEventKind_WATCH_APPENDED {
			t.Fatalf("%s watcher: unexpected %v (the writer only appends)", name, ev)
		}
		got = append(got, ev)
	}
	if len(got) != len(want) {
		t.Fatalf("%s watcher saw %d appends after end %d, history has %d", name, len(got), start, len(want))
	}
	for i, ev := range got {
		e := want[i]
		if ev.Version != e.Version || ev.Range.Start != e.Range.Start || ev.Range.End != e.Range.End ||
			ev.Object.Key != e.Object.Key || ev.Object.Identity != e.Object.Identity ||
			ev.Bytes.GetLength() != e.Bytes.GetLength() || ev.CommittedEnd != e.Range.End {
			t.Fatalf("%s watcher: append %d is %v, history has %v", name, i, ev, e)
		}
	}
	if got[len(got)-1].CommittedEnd != final.CommittedEnd {
		t.Fatalf("%s watcher ends at %d, stream at %d", name, got[len(got)-1].CommittedEnd, final.CommittedEnd)
	}
}

func listEvidence(t *testing.T, cl *client.Client, stream uint64) []*metadpb.Evidence {
	t.Helper()
	var out []*metadpb.Evidence
	from := uint64(0)
	for {
		resp, err := client.Call(ctxT(t, 10*time.Second), cl, cl.Metad.ListEvidence,
			&metadpb.ListEvidenceRequest{StreamId: stream, From: from, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.Evidence...)
		if len(resp.Evidence) < 500 {
			return out
		}
		from = resp.Evidence[len(resp.Evidence)-1].Range.End
	}
}

// TestWatchResumeAndCompaction: on a node holding 4 events per stream, a
// resume inside the ring gets exactly the events after it; one before the
// ring gets the typed compacted error with the stream's current state; the
// DescribeStream long poll waits for a change.
func TestWatchResumeAndCompaction(t *testing.T) {
	c := proc.New(t, 1, "--watch-history", "4")
	c.StartAll()
	awaitLeader(c, 30*time.Second)
	cl := c.Client()
	w := proc.NewWriter(t, cl, "short-history")
	var versions []uint64
	for range 10 {
		w.MustAppend(t, 1)
		s, err := c.Describe(0, w.Stream)
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, s.Version)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []uint64
	for ev, err := range cl.Watch(ctx, w.Stream, versions[6]) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == metadpb.WatchEventKind_WATCH_STARTED {
			if ev.CommittedEnd != 10 {
				t.Fatalf("started at %v, want committed end 10", ev)
			}
			break
		}
		got = append(got, ev.Version)
	}
	if fmt.Sprint(got) != fmt.Sprint(versions[7:]) {
		t.Fatalf("resume after %d got versions %v, want %v", versions[6], got, versions[7:])
	}

	for _, err := range cl.Watch(ctx, w.Stream, versions[2]) {
		var ce *client.CompactedError
		if !errors.As(err, &ce) {
			t.Fatalf("resume before the ring: %v, want *client.CompactedError", err)
		}
		if ce.CommittedEnd != 10 || ce.Version != versions[9] || ce.Status != "ACTIVE" {
			t.Fatalf("compacted error carries %+v, want end 10 version %d ACTIVE", ce, versions[9])
		}
		break
	}

	// Long poll: nothing changes, so the answer comes after the wait with
	// the same version; then a change during a long wait ends it.
	cur := versions[9]
	resp, err := cl.Metad.DescribeStream(ctx, &metadpb.DescribeStreamRequest{
		StreamId: w.Stream, MinVersion: cur, Wait: durationpb.New(200 * time.Millisecond)})
	if err != nil || resp.Stream.Version != cur {
		t.Fatalf("idle long poll: %v %v, want version %d", resp, err, cur)
	}
	answered := make(chan *metadpb.DescribeStreamResponse, 1)
	go func() {
		resp, err := cl.Metad.DescribeStream(ctx, &metadpb.DescribeStreamRequest{
			StreamId: w.Stream, MinVersion: cur, Wait: durationpb.New(25 * time.Second)})
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	// Append once the long poll is waiting (a watcher is registered), so
	// the answer can only come from the change.
	c.WaitFor("the long poll to wait", 20*time.Second, func() bool { return watchersOn(c, 0) == 1 })
	w.MustAppend(t, 1)
	if resp := <-answered; resp == nil || resp.Stream.Version <= cur || resp.Stream.CommittedEnd != 11 {
		t.Fatalf("long poll answered %v, want the append at end 11", resp)
	}
}

// watchersOn reads metad_watch_watchers from server i's metrics (-1 if it
// cannot).
func watchersOn(c *proc.Cluster, i int) int { return metricOn(c, i, "metad_watch_watchers") }

// metricOn reads an unlabelled integer metric from server i (-1 if it
// cannot).
func metricOn(c *proc.Cluster, i int, name string) int {
	resp, err := http.Get("http://" + c.Nodes[i].HTTP + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// awaitLeader waits until server 0 reports a leader and returns its index.
func awaitLeader(c *proc.Cluster, timeout time.Duration) int {
	leader := -1
	c.WaitFor("a leader", timeout, func() bool {
		leader = c.Leader(0)
		return leader >= 0
	})
	return leader
}

// TestWatchSlowConsumerIsCutOffAndResumes: a watcher that stops reading is
// cut off (its queue holds one event) instead of buffered without bound;
// the error says WATCH_SLOW_CONSUMER with the last version sent, and a
// watch resumed from there gets every later append, none twice.
func TestWatchSlowConsumerIsCutOffAndResumes(t *testing.T) {
	c := proc.New(t, 1, "--watch-buffer", "1", "--watch-history", "100000")
	c.StartAll()
	awaitLeader(c, 30*time.Second)
	cl := c.Client()
	w := proc.NewWriter(t, cl, "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream, err := cl.Metad.Watch(ctx, &metadpb.WatchRequest{StreamId: w.Stream})
	if err != nil {
		t.Fatal(err)
	}
	started, err := stream.Recv()
	if err != nil || started.Kind != metadpb.WatchEventKind_WATCH_STARTED {
		t.Fatalf("first event %v %v, want WATCH_STARTED", started, err)
	}
	// Append, not reading, until the server cuts the watcher off (gRPC's
	// flow-control window fills first, then the one-event queue).
	for n := 0; metricOn(c, 0, "metad_watch_cutoffs_total") < 1; n++ {
		if n == 20000 {
			t.Fatal("20000 unread appends and the watcher was not cut off")
		}
		w.MustAppend(t, 1)
	}
	var got []*metadpb.WatchEvent
	var cut error
	for {
		ev, err := stream.Recv()
		if err != nil {
			cut = err
			break
		}
		got = append(got, ev)
	}
	info := errorInfo(cut)
	if info.GetReason() != "WATCH_SLOW_CONSUMER" || status.Code(cut) != codes.Unavailable {
		t.Fatalf("watch ended with %v, want UNAVAILABLE WATCH_SLOW_CONSUMER", cut)
	}
	before, last := len(got), got[len(got)-1].Version
	if info.Metadata["last_version"] != strconv.FormatUint(last, 10) {
		t.Fatalf("last_version %q, want %d (the last event received)", info.Metadata["last_version"], last)
	}
	// Resume after the last event received, with the Go client.
	w.MustAppend(t, 1)
	for ev, err := range cl.Watch(ctx, w.Stream, last) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == metadpb.WatchEventKind_WATCH_STARTED {
			break
		}
		got = append(got, ev)
	}
	history := listEvidence(t, cl, w.Stream)
	if len(got) != len(history) {
		t.Fatalf("saw %d appends across the cut-off, history has %d", len(got), len(history))
	}
	for i, ev := range got {
		if ev.Version != history[i].Version || ev.Range.End != history[i].Range.End {
			t.Fatalf("event %d: %v, history %v", i, ev, history[i])
		}
	}
	t.Logf("cut off after %d events received; %d appends in all", before, len(history))
}

func errorInfo(err error) *errdetails.ErrorInfo {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// TestWatchOnAnIsolatedNodeEnds: a follower that loses its leader (both
// other servers paused) ends its watches after --watch-stale-after with a
// resumable NO_LEADER carrying the last version sent, instead of leaving
// the client waiting in silence.
func TestWatchOnAnIsolatedNodeEnds(t *testing.T) {
	c := proc.New(t, 3, "--watch-stale-after", "1s")
	c.StartAll()
	formed(t, c, 3)
	leader := awaitLeader(c, 30*time.Second)
	follower := (leader + 1) % 3
	w := proc.NewWriter(t, c.Client(), "isolated")
	cl := newClient(t, c, follower)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := cl.Metad.Watch(ctx, &metadpb.WatchRequest{StreamId: w.Stream})
	if err != nil {
		t.Fatal(err)
	}
	started, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Nodes {
		if i != follower {
			c.Pause(i)
			defer c.Resume(i)
		}
	}
	ev, err := stream.Recv() // blocks until the follower gives up on its leader
	if err == nil {
		t.Fatalf("unexpected event %v", ev)
	}
	info := errorInfo(err)
	if status.Code(err) != codes.Unavailable || info.GetReason() != "NO_LEADER" ||
		info.Metadata["last_version"] != strconv.FormatUint(started.Version, 10) {
		t.Fatalf("watch on the isolated follower ended with %v (%v), want UNAVAILABLE NO_LEADER, last_version %d",
			err, info, started.Version)
	}
}

// TestWatchEndsResumablyWhenItsServerStops: a graceful stop (SIGTERM) ends
// the server's watches at once with SHUTTING_DOWN and the last version
// sent, rather than holding the stop until its timeout.
func TestWatchEndsResumablyWhenItsServerStops(t *testing.T) {
	c := proc.New(t, 1)
	c.StartAll()
	awaitLeader(c, 30*time.Second)
	w := proc.NewWriter(t, c.Client(), "stopping")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := c.Client().Metad.Watch(ctx, &metadpb.WatchRequest{StreamId: w.Stream})
	if err != nil {
		t.Fatal(err)
	}
	started, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(0)
	_, err = stream.Recv()
	info := errorInfo(err)
	if status.Code(err) != codes.Unavailable || info.GetReason() != "SHUTTING_DOWN" ||
		info.Metadata["last_version"] != strconv.FormatUint(started.Version, 10) {
		t.Fatalf("watch ended with %v (%v), want UNAVAILABLE SHUTTING_DOWN, last_version %d", err, info, started.Version)
	}
}
