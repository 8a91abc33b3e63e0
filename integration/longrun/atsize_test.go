package longrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api"
	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/proc"
)

// The size and settings of TestRestartsAtSize.
const (
	// stateRecords is how many index records the cluster holds before the
	// first restart, published by bigStreams publishers at once, one
	// COMMITTED generation each, in parts of fsm.MaxRecordsPerCommand.
	// METAD_ATSIZE_RECORDS overrides it (atSizeRecords; PERFORMANCE.md's
	// run at 20M).
	stateRecords = 2_000_000
	bigStreams   = 4
	// snapshotThreshold: each node snapshots once the build and some
	// padding are in its log, and again every snapshotThreshold entries of
	// the test's own writes. It is above raftstore's TrailingLogs (10240),
	// so the first snapshot also compacts the start of the log away: a
	// wiped follower can only catch up by InstallSnapshot.
	snapshotThreshold = 16384
	// padders append concurrently until every node has snapshotted.
	padders = 16
)

// TestRestartsAtSize is issue 15's "restarts at size" on real processes.
// A 3-node cluster holds stateRecords index records, in a snapshot on
// every node. With a writer appending all along:
//
//   - rolling restart, followers first and the leader last, as README's
//     "Graceful shutdown and rolling restarts" says: SIGTERM (a leader hands
//     leadership over itself), start again, wait for /readyz. Each server
//     answers /readyz with 503 from the start of its snapshot restore until
//     it has applied the leader's commit index as of its restart (within
//     api's CaughtUpSlack), then 200; writes are acknowledged while it is
//     down; no server ever leaves the configuration or stops being a voter;
//   - wiped follower, as README's log-store switch says: stop it, delete its
//     data dir, start it with the same --node-id and --join. It catches up by
//     InstallSnapshot (its log says so), as a new incarnation and still a
//     voter, while the other two go on committing; /readyz is 503 until it
//     has caught up.
//
// At the end every acknowledged append is on every server and all three
// hold the same state (state hash at the same applied index). The log
// reports the write gaps, snapshot sizes and write, restore and install
// times, and the servers' peak RSS.
func TestRestartsAtSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a state of 2M index records and restarts every server")
	}
	t.Parallel()
	c := proc.New(t, 3, "--raft-snapshot-threshold", fmt.Sprint(snapshotThreshold), "--raft-snapshot-interval", "1s")
	c.StartAll()
	c.WaitFormed(3)
	began := time.Now()
	buildIndex := buildState(t, c)
	t.Logf("published %d index records over %d streams in %v (through raft index %d)",
		atSizeRecords(t), bigStreams, time.Since(began).Round(time.Second), buildIndex)

	w := proc.NewWriter(t, c.Client(), "atsize-writer")
	l := startWrites(t, w)
	padded := time.Now()
	entries := padUntilSnapshotted(t, c, buildIndex)
	t.Logf("every server snapshotted the state and compacted its log after %d more entries (%v)",
		entries, time.Since(padded).Round(time.Second))
	peak := make([]int64, len(c.Nodes))
	notePeaks(c, peak)

	rollingRestart(t, c, l, peak)
	wipedFollower(t, c, l, peak)
	notePeaks(c, peak)

	acks := l.finish()
	stopped := time.Now()
	if bad := l.failures(); len(bad) > 0 {
		t.Errorf("%d appends failed in a way a client must never see, first: %v", len(bad), bad[0])
	}
	checkAcked(t, c, w, len(acks))
	checkSameState(t, c)
	noConfigurationChange(t, c)
	gap, gapAt := longestGap(acks, padded, acks[len(acks)-1])
	t.Logf("%d appends acknowledged in %v, every one on every server; longest wait between two acknowledgements overall %v, from %s",
		len(acks), stopped.Sub(padded).Round(time.Second), gap, gapAt.UTC().Format("15:04:05.000"))
	for i := range c.Nodes {
		t.Logf("%s: peak RSS %d MiB; %s", c.Nodes[i].ID, peak[i]>>20, snapshotFigures(c.Log(i)))
	}
	t.Logf("whole test %v", time.Since(began).Round(time.Second))
}

// atSizeRecords is stateRecords, or METAD_ATSIZE_RECORDS when set.
func atSizeRecords(t *testing.T) uint64 {
	if v := os.Getenv("METAD_ATSIZE_RECORDS"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < bigStreams {
			t.Fatalf("METAD_ATSIZE_RECORDS=%q: want a number of index records", v)
		}
		return n
	}
	return stateRecords
}

// buildState publishes stateRecords index records: bigStreams streams, each
// one append of its share of offsets in one object and then generation 1
// over it, one record per offset. It returns the leader's commit index
// after the last part.
func buildState(t *testing.T, c *proc.Cluster) uint64 {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, bigStreams)
	for s := range bigStreams {
		w := proc.NewWriter(t, c.Client(), fmt.Sprintf("atsize-big-%d", s))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := publishBig(w, atSizeRecords(t)/bigStreams); err != nil {
				errs <- fmt.Errorf("stream %d: %w", w.Stream, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return leaderCommit(t, c, 0)
}

// publishBig commits offsets [0, n) of w's stream in one append and
// publishes generation 1 of n one-offset records over them.
func publishBig(w *proc.Writer, n uint64) error {
	// A minute for each call: the whole fill grows with the size asked.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const recordBytes = 64
	ref := &metadpb.ObjectRef{Key: fmt.Sprintf("atsize/big/%d", w.Stream), Identity: fmt.Sprintf("sha256:%064x", w.Stream)}
	cl := w.Client
	if _, err := client.Call(ctx, cl, cl.Metad.RegisterObject, &metadpb.RegisterObjectRequest{
		Object: ref, Size: n * recordBytes, RequestId: client.NewRequestID()}); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	if _, err := client.Call(ctx, cl, cl.Metad.CommitAppend, &metadpb.CommitAppendRequest{
		StreamId: w.Stream, WriterEpoch: w.Epoch, End: n, Object: ref,
		Bytes: &metadpb.ByteRange{Length: n * recordBytes}, RequestId: client.NewRequestID()}); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	obj := fsm.ObjectRef{Key: ref.Key, Identity: ref.Identity}
	// The object is registered, never written; its records carry the data
	// checksum of zeros, so the state at size holds what a broker's would.
	data := checksum.Of(make([]byte, recordBytes))
	for start := uint64(0); start < n; start += fsm.MaxRecordsPerCommand {
		end := min(start+fsm.MaxRecordsPerCommand, n)
		req := &metadpb.PublishGenerationRequest{StreamId: w.Stream, View: metadpb.View_COMMITTED, Generation: 1,
			WriterEpoch: w.Epoch, Coverage: &metadpb.Range{End: n}, Complete: end == n, RequestId: client.NewRequestID(),
			Records: make([]*metadpb.IndexRecord, 0, end-start)}
		for o := start; o < end; o++ {
			rng, br := fsm.Range{Start: o, End: o + 1}, fsm.ByteRange{Offset: o * recordBytes, Length: recordBytes}
			key := fsm.IndexKey{Stream: w.Stream, View: fsm.Committed, Generation: 1, Start: o}
			req.Records = append(req.Records, &metadpb.IndexRecord{
				Range: &metadpb.Range{Start: o, End: o + 1}, Object: ref,
				Bytes:    &metadpb.ByteRange{Offset: br.Offset, Length: br.Length},
				Checksum: fsm.RecordChecksumData(key, rng, nil, obj, br, data), DataCrc32C: data.Ptr()})
		}
		pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := client.Call(pctx, cl, cl.Metad.PublishGeneration, req)
		pcancel()
		if err != nil {
			return fmt.Errorf("publish part at %d: %w", start, err)
		}
	}
	return nil
}

// padUntilSnapshotted appends from padders writers until every server's log
// says it completed a snapshot through the build and compacted its log,
// and returns how many entries that took.
func padUntilSnapshotted(t *testing.T, c *proc.Cluster, buildIndex uint64) uint64 {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range padders {
		w := proc.NewWriter(t, c.Client(), fmt.Sprintf("atsize-pad-%d", p))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = w.Append(ctx, 1) // padding: only the entries count
				cancel()
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	c.WaitFor("a snapshot through the build, and a compacted log, on every server", 5*time.Minute, func() bool {
		for i := range c.Nodes {
			log := c.Log(i)
			if lastSnapshotIndex(log) < buildIndex || !strings.Contains(log, `msg="compacting logs"`) {
				return false
			}
		}
		return true
	})
	return leaderCommit(t, c, 0) - buildIndex
}

// rollingRestart restarts every server in turn, followers first.
func rollingRestart(t *testing.T, c *proc.Cluster, l *writes, peak []int64) {
	t.Helper()
	leader := c.Leader(0)
	if leader < 0 {
		t.Fatal("no leader before the rolling restart")
	}
	var order []int
	for i := range c.Nodes {
		if i != leader {
			order = append(order, i)
		}
	}
	for _, i := range append(order, leader) {
		other := (i + 1) % len(c.Nodes)
		wasLeader := c.Leader(other) == i
		notePeaks(c, peak)
		stopped := time.Now()
		c.Stop(i)
		if wasLeader && !strings.Contains(c.Log(i), "shutdown: leadership transferred") {
			t.Errorf("%s led but did not hand leadership over", c.Nodes[i].ID)
		}
		allVoters(t, c, i)
		l.waitAcks(t, c, 5) // writable with the server down
		mark := leaderCommit(t, c, other)
		logBefore := len(c.Log(i))
		c.Start(i)
		seen := awaitCaughtUp(t, c, i, mark)
		restart := c.Log(i)[logBefore:]
		// The state is on disk: a restart opens it, never restores it.
		if strings.Contains(restart, `msg="starting restore from snapshot"`) {
			t.Errorf("%s restored a snapshot at its restart instead of opening its state store", c.Nodes[i].ID)
		}
		if h, r := strings.Index(restart, "http admin serving"), strings.Index(restart, `msg="raftstore: state opened"`); h < 0 || r < 0 || h > r {
			t.Errorf("%s: /readyz was not served before its state opened (http at %d, opened at %d in its log)", c.Nodes[i].ID, h, r)
		}
		allVoters(t, c, -1)
		t.Logf("%s (leader: %v) restarted: ready %v after its stop; /readyz answers meanwhile %v; %s; %d appends acknowledged, longest wait %v",
			c.Nodes[i].ID, wasLeader, time.Since(stopped).Round(10*time.Millisecond), seen, restoreFigures(restart),
			l.ackedBetween(stopped, time.Now()), l.gap(stopped, time.Now()))
	}
}

// wipedFollower stops a follower, deletes its data dir and starts it again
// under its node id: it must catch up by InstallSnapshot, keep its place
// as a voter as a new incarnation, while the others commit.
func wipedFollower(t *testing.T, c *proc.Cluster, l *writes, peak []int64) {
	t.Helper()
	leader := c.Leader(0)
	if leader < 0 {
		t.Fatal("no leader before the wipe")
	}
	f := (leader + 1) % len(c.Nodes)
	id := c.Nodes[f].ID
	oldInc := incarnation(t, c, leader, id)
	notePeaks(c, peak)
	stopped := time.Now()
	c.Stop(f)
	if err := os.RemoveAll(c.Nodes[f].DataDir); err != nil {
		t.Fatal(err)
	}
	mark := leaderCommit(t, c, leader)
	logBefore := len(c.Log(f))
	c.Start(f)
	started := time.Now()
	seen := awaitCaughtUp(t, c, f, mark)
	ready := time.Now()
	restart := c.Log(f)[logBefore:]
	if !strings.Contains(restart, `msg="Installed remote snapshot"`) {
		t.Fatalf("%s caught up without installing a snapshot", id)
	}
	if during := l.ackedBetween(started, ready); during == 0 {
		t.Errorf("no append was acknowledged while %s caught up (%v)", id, ready.Sub(started))
	}
	if inc := incarnation(t, c, leader, id); inc == "" || inc == oldInc {
		t.Errorf("%s's incarnation after the wipe is %q, before %q: want a new one", id, inc, oldInc)
	}
	allVoters(t, c, -1)
	t.Logf("%s wiped and restarted: ready %v after its start; /readyz answers meanwhile %v; %s; %d appends acknowledged while it caught up, longest wait %v",
		id, ready.Sub(started).Round(10*time.Millisecond), seen, installFigures(restart),
		l.ackedBetween(started, ready), l.gap(stopped, ready))
}

// awaitCaughtUp polls server i's /readyz until it says 200, failing the
// test if it does so before i has applied mark (the leader's commit index
// from before i started) but for api's CaughtUpSlack. It returns how many
// answers of each kind it saw.
func awaitCaughtUp(t *testing.T, c *proc.Cluster, i int, mark uint64) map[string]int {
	t.Helper()
	slack := api.DefaultConfig().CaughtUpSlack
	seen := map[string]int{}
	c.WaitFor(c.Nodes[i].ID+" ready", 5*time.Minute, func() bool {
		code, body := c.Readyz(i)
		seen[readyzKind(code, body)]++
		if code == 0 && len(seen) > 1 {
			// Unreachable only before HTTP is up: it is served from before
			// the restore until the server stops.
			t.Fatalf("%s: /readyz answered, then did not: %s", c.Nodes[i].ID, body)
		}
		if code != http.StatusOK {
			return false
		}
		applied, err := appliedIndex(c, i)
		if err != nil {
			t.Fatalf("%s: /readyz 200, then its status fails: %v", c.Nodes[i].ID, err)
		}
		if applied+slack < mark {
			t.Fatalf("%s: /readyz 200 at applied index %d, more than %d behind the leader's commit index %d from before its start",
				c.Nodes[i].ID, applied, slack, mark)
		}
		return true
	})
	return seen
}

// readyzKind names a /readyz answer for the test log.
func readyzKind(code int, body string) string {
	switch {
	case code == 0:
		return "unreachable"
	case code == http.StatusOK:
		return "200"
	case strings.Contains(body, "restoring"):
		return "503 restoring"
	case strings.Contains(body, "behind"):
		return "503 behind"
	}
	return fmt.Sprintf("%d %s", code, strings.TrimSpace(strings.TrimPrefix(body, "not ready: ")))
}

// allVoters fails the test if any running server's configuration lacks a
// server or holds one as a non-voter; server `down` (-1: none) is not
// asked. A server that does not answer yet is asked again.
func allVoters(t *testing.T, c *proc.Cluster, down int) {
	t.Helper()
	for j := range c.Nodes {
		if j == down {
			continue
		}
		c.WaitFor(c.Nodes[j].ID+"'s status", time.Minute, func() bool {
			st, err := c.Status(j)
			if err != nil {
				return false
			}
			voters := map[string]bool{}
			for _, n := range st.Nodes {
				voters[n.NodeId] = n.Voter
			}
			for _, nd := range c.Nodes {
				if !voters[nd.ID] {
					t.Fatalf("%s's configuration: %s removed or not a voter (%v)", c.Nodes[j].ID, nd.ID, voters)
				}
			}
			return true
		})
	}
}

// noConfigurationChange fails the test if any server's log records a
// membership change (every decision but a hold): the restarts, the wiped
// one included, must leave the configuration alone.
func noConfigurationChange(t *testing.T, c *proc.Cluster) {
	t.Helper()
	for i := range c.Nodes {
		for _, l := range parseLog(c.Log(i)) {
			if d := l.fields["decision"]; d != "" && d != "hold" {
				t.Errorf("%s logged a membership change: %s decision=%s server=%s", c.Nodes[i].ID, l.msg, d, l.fields["server"])
			}
		}
	}
}

// leaderCommit is the commit index of the leader server `from` knows,
// asked again until there is one.
func leaderCommit(t *testing.T, c *proc.Cluster, from int) uint64 {
	t.Helper()
	var commit uint64
	c.WaitFor("the leader's commit index", time.Minute, func() bool {
		st, err := c.Status(from)
		if err != nil {
			return false
		}
		for _, n := range st.Nodes {
			if n.NodeId == st.LeaderId && n.CommitIndex > 0 {
				commit = n.CommitIndex
				return true
			}
		}
		return false
	})
	return commit
}

func appliedIndex(c *proc.Cluster, i int) (uint64, error) {
	st, err := c.Status(i)
	if err != nil {
		return 0, err
	}
	for _, n := range st.Nodes {
		if n.NodeId == c.Nodes[i].ID {
			return n.AppliedIndex, nil
		}
	}
	return 0, fmt.Errorf("%s not in its own status", c.Nodes[i].ID)
}

func incarnation(t *testing.T, c *proc.Cluster, from int, id string) string {
	t.Helper()
	st, err := c.Status(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.NodeId == id {
			return n.Incarnation
		}
	}
	return ""
}

// checkAcked checks that every server holds the writer's stream up to its
// last acknowledged end, with one generation-0 index record per append.
func checkAcked(t *testing.T, c *proc.Cluster, w *proc.Writer, acks int) {
	t.Helper()
	for i := range c.Nodes {
		s, err := c.Describe(i, w.Stream)
		if err != nil {
			t.Fatalf("%s: describe: %v", c.Nodes[i].ID, err)
		}
		if s.CommittedEnd != w.End {
			t.Fatalf("%s: committed end %d, the writer's acknowledged end %d", c.Nodes[i].ID, s.CommittedEnd, w.End)
		}
		if n := countGen0(t, c, i, w.Stream, w.End); n < acks {
			t.Fatalf("%s: %d index records, %d acknowledged appends", c.Nodes[i].ID, n, acks)
		}
	}
}

// countGen0 lists the stream's committed generation-0 records through
// server i, checks they cover [0, end) without gap, and counts them.
func countGen0(t *testing.T, c *proc.Cluster, i int, stream, end uint64) int {
	t.Helper()
	cl := c.Client(i)
	n, next := 0, uint64(0)
	for next < end {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := client.Call(ctx, cl, cl.Metad.ListIndex, &metadpb.ListIndexRequest{
			StreamId: stream, View: metadpb.View_COMMITTED, From: next, Limit: 1000})
		cancel()
		if err != nil {
			t.Fatalf("%s: list index: %v", c.Nodes[i].ID, err)
		}
		if len(resp.Records) == 0 {
			break
		}
		for _, r := range resp.Records {
			if r.Record.Range.Start != next {
				t.Fatalf("%s: index records: gap or overlap at %d", c.Nodes[i].ID, next)
			}
			next = r.Record.Range.End
			n++
		}
	}
	if next != end {
		t.Fatalf("%s: index records end at %d, committed end %d", c.Nodes[i].ID, next, end)
	}
	return n
}

// checkSameState asks for every server's state hash (`metad status --hash`)
// until all three are at one command index, and compares them there.
func checkSameState(t *testing.T, c *proc.Cluster) {
	t.Helper()
	cl := c.Client(0)
	var last []string
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		asked := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, err := cl.Cluster.Status(ctx, &metadpb.StatusRequest{WithHash: true})
		cancel()
		if err != nil {
			last = []string{err.Error()}
			continue
		}
		last = last[:0]
		same := len(st.Nodes) == len(c.Nodes)
		for _, n := range st.Nodes {
			last = append(last, fmt.Sprintf("%s at %d hash %x %s", n.NodeId, n.AppliedIndex, n.StateHash, n.Error))
			same = same && len(n.StateHash) > 0 && n.AppliedIndex == st.Nodes[0].AppliedIndex
		}
		if !same {
			time.Sleep(time.Second) // the servers (real processes) are still applying: ask again in a second
			continue
		}
		for _, n := range st.Nodes[1:] {
			if !bytes.Equal(n.StateHash, st.Nodes[0].StateHash) {
				t.Fatalf("%s and %s differ at command index %d: %v", st.Nodes[0].NodeId, n.NodeId, n.AppliedIndex, last)
			}
		}
		t.Logf("every server's state hash equal at command index %d (the hashed status took %v)",
			st.Nodes[0].AppliedIndex, time.Since(asked).Round(10*time.Millisecond))
		return
	}
	t.Fatalf("no state hash of every server at one command index within 3m; last: %v", last)
}

// notePeaks raises peak[i] to server i's peak RSS so far (VmHWM).
func notePeaks(c *proc.Cluster, peak []int64) {
	for i := range c.Nodes {
		if pid := c.PID(i); pid > 0 {
			peak[i] = max(peak[i], vmHWM(pid))
		}
	}
}

func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// writes appends one offset at a time from a goroutine until finished,
// the way a broker would through restarts, noting when each append was
// acknowledged.
type writes struct {
	w    *proc.Writer
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu   sync.Mutex
	acks []time.Time
	bad  []error // failures a client must never see
}

func startWrites(t *testing.T, w *proc.Writer) *writes {
	l := &writes{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go l.run(t)
	t.Cleanup(func() { l.finish() })
	return l
}

func (l *writes) run(t *testing.T) {
	defer close(l.done)
	for {
		select {
		case <-l.stop:
			l.settle(t)
			return
		default:
		}
		if err := l.appendOnce(); err != nil {
			time.Sleep(20 * time.Millisecond) // back-off of a client retrying a write the servers (real processes) refused
		}
	}
}

func (l *writes) appendOnce() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.w.Append(ctx, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.acks = append(l.acks, time.Now())
	case !acceptable(err):
		l.bad = append(l.bad, err)
	}
	return err
}

// settle retries an append of unknown outcome until it is known, so that
// the writer's end is the stream's committed end.
func (l *writes) settle(t *testing.T) {
	deadline := time.Now().Add(time.Minute)
	for l.w.Pending() && time.Now().Before(deadline) {
		_ = l.appendOnce()
	}
	if l.w.Pending() {
		t.Errorf("an append stayed indeterminate for a minute")
	}
}

// acceptable: what a client may see while servers restart: retryable
// failures, and indeterminate ones (retried with the same request id).
func acceptable(err error) bool {
	e, ok := client.AsError(err)
	if !ok {
		return errors.Is(err, context.DeadlineExceeded)
	}
	return e.Retryable() || !e.Definite || e.Code == codes.DeadlineExceeded || e.Code == codes.Unavailable
}

// finish stops the writes and returns when each append was acknowledged.
func (l *writes) finish() []time.Time {
	l.once.Do(func() { close(l.stop) })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.acks...)
}

func (l *writes) failures() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.bad...)
}

func (l *writes) ackedBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.acks {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

func (l *writes) gap(from, to time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maxGap(l.acks, from, to)
}

// maxGap is the longest time in [from, to] without an acknowledgement.
func maxGap(acks []time.Time, from, to time.Time) time.Duration {
	d, _ := longestGap(acks, from, to)
	return d
}

// longestGap is the longest time in [from, to] without an
// acknowledgement, and when it began.
func longestGap(acks []time.Time, from, to time.Time) (time.Duration, time.Time) {
	var longest time.Duration
	var began time.Time
	prev := from
	for _, at := range append(slices.Clone(acks), to) {
		if at.Before(from) || at.After(to) {
			continue
		}
		if at.Sub(prev) > longest {
			longest, began = at.Sub(prev), prev
		}
		prev = at
	}
	return longest.Round(time.Millisecond), began
}

// waitAcks waits until n more appends are acknowledged.
func (l *writes) waitAcks(t *testing.T, c *proc.Cluster, n int) {
	t.Helper()
	count := func() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.acks) }
	start := count()
	c.WaitFor(fmt.Sprintf("%d more acknowledged appends", n), time.Minute, func() bool { return count() >= start+n })
}

// logLine is one line of a server's text log: its time, message and
// key=value fields.
type logLine struct {
	at     time.Time
	msg    string
	fields map[string]string
}

var logField = regexp.MustCompile(`([A-Za-z_.-]+)=("(?:[^"\\]|\\.)*"|\S*)`)

func parseLog(log string) []logLine {
	var out []logLine
	for _, line := range strings.Split(log, "\n") {
		l := logLine{fields: map[string]string{}}
		for _, m := range logField.FindAllStringSubmatch(line, -1) {
			v := m[2]
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			l.fields[m[1]] = v
		}
		at, err := time.Parse(time.RFC3339Nano, l.fields["time"])
		if err != nil {
			continue
		}
		l.at, l.msg = at, l.fields["msg"]
		out = append(out, l)
	}
	return out
}

// lastSnapshotIndex is the index of the last snapshot the log says was
// completed, 0 if none.
func lastSnapshotIndex(log string) uint64 {
	var last uint64
	for _, l := range parseLog(log) {
		if l.msg == "snapshot complete up to" {
			n, _ := strconv.ParseUint(l.fields["index"], 10, 64)
			last = max(last, n)
		}
	}
	return last
}

// snapshotFigures lists the snapshots a server's log says it wrote: when
// each began and how long it took.
func snapshotFigures(log string) string {
	var started time.Time
	var took []string
	for _, l := range parseLog(log) {
		switch l.msg {
		case "starting snapshot up to":
			started = l.at
		case "snapshot complete up to":
			if !started.IsZero() {
				took = append(took, fmt.Sprintf("%s (%v)", started.UTC().Format("15:04:05"), l.at.Sub(started).Round(10*time.Millisecond)))
			}
		}
	}
	if len(took) == 0 {
		return "no snapshot written"
	}
	return fmt.Sprintf("%d snapshots written, begun at %s", len(took), strings.Join(took, ", "))
}

// restoreFigures: the size and duration of the snapshot restore in a
// restarted server's log.
func restoreFigures(log string) string {
	var started time.Time
	for _, l := range parseLog(log) {
		switch l.msg {
		case "starting restore from snapshot":
			started = l.at
		case "restored from snapshot":
			return fmt.Sprintf("restored a snapshot of %s in %v", mib(l.fields["size-in-bytes"]), l.at.Sub(started).Round(10*time.Millisecond))
		}
	}
	return "no snapshot restored"
}

// installFigures: when a wiped server had received its InstallSnapshot
// after its start, how big, and how long the restore took.
func installFigures(log string) string {
	lines := parseLog(log)
	if len(lines) == 0 {
		return "empty log"
	}
	start := lines[0].at
	var copied logLine
	for _, l := range lines {
		switch l.msg {
		case "copied to local snapshot":
			copied = l
		case "Installed remote snapshot":
			return fmt.Sprintf("InstallSnapshot of %s received %v after its start, restored in %v",
				mib(copied.fields["bytes"]), copied.at.Sub(start).Round(10*time.Millisecond), l.at.Sub(copied.at).Round(10*time.Millisecond))
		}
	}
	return "no snapshot installed"
}

func mib(bytes string) string {
	n, _ := strconv.ParseInt(bytes, 10, 64)
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}
