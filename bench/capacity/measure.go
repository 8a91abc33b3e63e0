package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/bench/load"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
)

// bench is one run: the cluster, a client of all its nodes, the filled
// streams, and the settings.
type bench struct {
	o   options
	cl  *cluster
	c   *client.Client
	f   *filler
	out io.Writer // progress lines
	// appenders are the streams the commit-append runs write to, made
	// once; each run's appends are trimmed away afterwards so that the
	// state stays the size being measured.
	appenders []*appender
	// estimate is diskEstimate for the largest size, all nodes.
	estimate int64
}

func (b *bench) say(format string, args ...any) {
	fmt.Fprintf(b.out, "==> "+format+"\n", args...)
}

// memory reads every running node's memory and marks the leader.
func (b *bench) memory(ctx context.Context) ([]NodeMemory, error) {
	leader, err := b.cl.leader(ctx, b.c)
	if err != nil {
		return nil, err
	}
	var out []NodeMemory
	for i := range b.cl.nodes {
		m, err := b.cl.memory(i)
		if err != nil {
			return nil, err
		}
		m.Role = "follower"
		if i == leader {
			m.Role = "leader"
		}
		out = append(out, m)
	}
	return out, nil
}

// nodeClient returns a client that talks to node i only.
func (b *bench) nodeClient(i int) (*client.Client, error) {
	return client.New(client.Config{Addrs: []string{b.cl.nodes[i].grpc}, Timeout: 10 * time.Minute, SpreadCalls: true, Holder: "metad-capacity"})
}

// checkpoint streams one consistent snapshot from node i and counts its
// bytes.
func (b *bench) checkpoint(ctx context.Context, i int) (*Checkpoint, error) {
	nc, err := b.nodeClient(i)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	start := clock.Real.Now()
	st, err := nc.Cluster.Snapshot(ctx, &metadpb.SnapshotRequest{})
	if err != nil {
		return nil, err
	}
	var n int64
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint from %s after %d bytes: %w", b.cl.nodes[i].id, n, err)
		}
		n += int64(len(chunk.Data))
	}
	return &Checkpoint{Bytes: n, Seconds: clock.Since(clock.Real, start).Seconds()}, nil
}

// snapCounts are a node's raft snapshot summaries (sum in ms, count).
type snapCounts struct{ createSum, createN, persistSum, persistN float64 }

func (b *bench) snapCounts(i int) snapCounts {
	m, err := b.cl.metrics(i)
	if err != nil {
		return snapCounts{}
	}
	return snapCounts{m["raft_snapshot_create_sum"], m["raft_snapshot_create_count"],
		m["raft_snapshot_persist_sum"], m["raft_snapshot_persist_count"]}
}

// waitRaftSnapshot waits (up to --snapshot-wait) until every node has a
// raft snapshot at or past index (each takes its own; the restarted
// follower then restores one), and reports the leader's with what its
// metrics say its snapshots took since before.
func (b *bench) waitRaftSnapshot(ctx context.Context, leader int, index uint64, before snapCounts) *RaftSnapshot {
	rs := &RaftSnapshot{}
	if b.o.snapshotWait <= 0 {
		rs.Note = "not waited for (--snapshot-wait 0)"
		return rs
	}
	err := b.cl.waitFor(ctx, "a raft snapshot of every node covering the fill", b.o.snapshotWait, func() bool {
		for i := range b.cl.nodes {
			if m, ok := b.cl.newestSnapshot(i); !ok || m.Index < index {
				return false
			}
		}
		return true
	})
	if err != nil {
		rs.Note = err.Error()
		return rs
	}
	meta, _ := b.cl.newestSnapshot(leader)
	after := b.snapCounts(leader)
	rs.Taken, rs.Index, rs.Bytes = true, meta.Index, meta.Size
	rs.CreateMs, _ = summaryDelta(before.createSum, before.createN, after.createSum, after.createN)
	rs.PersistMs, rs.Count = summaryDelta(before.persistSum, before.persistN, after.persistSum, after.persistN)
	return rs
}

// gauge is one series of node i's metrics.
func (b *bench) gauge(i int, name string) (float64, bool) {
	m, err := b.cl.metrics(i)
	if err != nil {
		return 0, false
	}
	v, ok := m[name]
	return v, ok
}

// rejoin stops follower i, wipes its data dir if asked, starts it again
// and times it until it serves: /readyz 200 and the leader's commit index
// of the moment it was stopped applied.
func (b *bench) rejoin(ctx context.Context, i, leader int, wipe bool) (*Rejoin, error) {
	nd := b.cl.nodes[i]
	commit, ok := b.gauge(leader, "metad_raft_commit_index")
	if !ok {
		return nil, fmt.Errorf("no metad_raft_commit_index from the leader %s", b.cl.nodes[leader].id)
	}
	installs := b.cl.countInLog(i, "Installed remote snapshot")
	r := &Rejoin{Node: nd.id}
	start := clock.Real.Now()
	if err := b.cl.stop(i, 5*time.Minute); err != nil {
		return nil, err
	}
	r.StopSeconds = clock.Since(clock.Real, start).Seconds()
	if wipe {
		if err := os.RemoveAll(nd.dataDir); err != nil {
			return nil, err
		}
	}
	logFrom := b.cl.logSize(i)
	var writer *backgroundLoad
	if wipe {
		// A writer keeps committing while the follower catches up.
		if err := b.makeAppenders(ctx); err != nil {
			return nil, err
		}
		writer = b.startLoad(ctx, b.appendOnce, b.o.rejoinTimeout)
	}
	start = clock.Real.Now()
	err := b.cl.start(i)
	if err == nil {
		err = b.cl.waitFor(ctx, nd.id+" serving", b.o.rejoinTimeout, func() bool {
			if !b.cl.ready(i) {
				return false
			}
			applied, ok := b.gauge(i, "metad_raft_applied_index")
			return ok && applied >= commit
		})
	}
	if err != nil {
		if writer != nil {
			_, _ = writer.stop(ctx)
		}
		return nil, err
	}
	r.ServingSeconds = clock.Since(clock.Real, start).Seconds()
	if writer != nil {
		if r.Commit, err = writer.stop(ctx); err != nil {
			return nil, fmt.Errorf("commit-append during the catch-up: %w", err)
		}
		if err := b.trimAppenders(ctx); err != nil {
			return nil, err
		}
	}
	m, err := b.cl.metrics(i)
	if err != nil {
		return nil, err
	}
	r.RestoreMs = m["raft_fsm_restore_sum"]
	r.FromSnapshot = m["raft_fsm_restore_count"] > 0
	if d, ok := startupRestore(b.cl.logSince(i, logFrom)); ok && !r.FromSnapshot {
		r.RestoreMs, r.FromSnapshot = float64(d)/float64(time.Millisecond), true
	}
	r.InstallSnapshot = b.cl.countInLog(i, "Installed remote snapshot") > installs
	return r, nil
}

// backgroundLoad is a load run that goes on until it is stopped (or its
// limit passes), measured from its start with no warm-up.
type backgroundLoad struct {
	cancel context.CancelFunc
	done   chan struct{}
	// res and err are written by the run's goroutine before done closes.
	res load.Result
	err error
}

// startLoad runs op at --concurrency in the background for up to limit.
func (b *bench) startLoad(ctx context.Context, op load.Op, limit time.Duration) *backgroundLoad {
	ctx, cancel := context.WithCancel(ctx)
	bl := &backgroundLoad{cancel: cancel, done: make(chan struct{})}
	cfg := load.Config{Concurrency: b.o.concurrency, Duration: min(max(limit, load.MinDuration), load.MaxDuration)}
	go func() {
		defer close(bl.done)
		bl.res, bl.err = load.Run(ctx, cfg, op, reason)
	}()
	return bl
}

// stop ends the run and returns what it measured. Operations cut short by
// the stop are not counted (load.Run drops them).
func (bl *backgroundLoad) stop(ctx context.Context) (*Load, error) {
	bl.cancel()
	<-bl.done
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if bl.err != nil && !errors.Is(bl.err, context.Canceled) {
		return nil, bl.err
	}
	return loadOf(bl.res), nil
}

// scrapeAll reads every node's metrics; a node that does not answer
// (stopped, restarting) gives an empty map.
func (b *bench) scrapeAll() []map[string]float64 {
	out := make([]map[string]float64, len(b.cl.nodes))
	for i := range b.cl.nodes {
		if m, err := b.cl.metrics(i); err == nil {
			out[i] = m
		}
	}
	return out
}

// appender is one stream the commit-append runs write to.
type appender struct {
	id, epoch, end uint64
	obj            *metadpb.ObjectRef
	seq            uint64
}

// makeAppenders creates --concurrency appender streams, once, and gives
// each a newly registered object for the run about to start: the last
// run's object lost its last reference when its appends were trimmed, and
// GC may have deleted it since (--gc-min-idle).
func (b *bench) makeAppenders(ctx context.Context) error {
	if b.appenders == nil {
		b.appenders = make([]*appender, b.o.concurrency)
	}
	return parallel(ctx, len(b.appenders), b.o.writers, func(ctx context.Context, w *writer, i int) error {
		if b.appenders[i] == nil {
			s, err := w.create(ctx, fmt.Sprintf("%s-append-%03d", b.f.prefix, i))
			if err != nil {
				return err
			}
			b.appenders[i] = &appender{id: s.id, epoch: s.epoch}
		}
		obj, _, err := w.place(ctx)
		b.appenders[i].obj = obj
		return err
	}, b.f)
}

// appendOffsets is the offsets each measured commit-append adds, with its
// generation-0 record, as metad-bench's commit-append does.
const appendOffsets = 10

func (b *bench) appendOnce(ctx context.Context, w int) (string, error) {
	a := b.appenders[w]
	req := &metadpb.CommitAppendRequest{StreamId: a.id, WriterEpoch: a.epoch, ExpectedStart: a.end, End: a.end + appendOffsets,
		Object: a.obj, Bytes: &metadpb.ByteRange{Offset: (a.seq % recordsPerObject) * recordBytes, Length: recordBytes},
		IndexGen0: true, RequestId: client.NewRequestID(), DataCrc32C: recordData.Ptr()}
	a.seq++
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := client.Call(ctx, b.c, b.c.Metad.CommitAppend, req)
	if err != nil {
		if d, derr := client.Call(ctx, b.c, b.c.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: a.id}); derr == nil {
			a.end = d.Stream.CommittedEnd
		}
		return "commit-append", err
	}
	a.end = resp.CommittedEnd
	return "commit-append", nil
}

// trimAppenders drops what the commit-append runs wrote.
func (b *bench) trimAppenders(ctx context.Context) error {
	return parallel(ctx, len(b.appenders), b.o.writers, func(ctx context.Context, w *writer, i int) error {
		a := b.appenders[i]
		s := &stream{id: a.id, epoch: a.epoch}
		return w.trim(ctx, s, a.end)
	}, b.f)
}

// outcomeError is a resolve that answered without a target: every offset
// the tool resolves is committed, live and indexed.
type outcomeError struct{ outcome metadpb.Outcome }

func (e outcomeError) Error() string { return "resolve answered " + e.outcome.String() }

// resolveOnce resolves a random live offset of a random filled stream,
// among its first --resolve-window live offsets if that is set.
func (b *bench) resolveOnce(ctx context.Context, _ int) (string, error) {
	s := b.f.streams[rand.IntN(len(b.f.streams))]
	span := s.end - s.trim
	if w := b.o.resolveWindow; w > 0 && w < span {
		span = w
	}
	off := s.trim + rand.Uint64N(span)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := b.c.Resolve(ctx, s.id, metadpb.View_COMMITTED, off, nil)
	if err == nil && resp.Outcome != metadpb.Outcome_TARGET {
		err = outcomeError{resp.Outcome}
	}
	return "resolve", err
}

func reason(err error) string {
	if r := client.Reason(err); r != "" {
		return r
	}
	var oe outcomeError
	if errors.As(err, &oe) {
		return "OUTCOME_" + oe.outcome.String()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "DEADLINE_EXCEEDED"
	}
	return "CLIENT_ERROR"
}

// runLoad runs op at --concurrency for --duration after --warmup; with
// during, checkpoints are streamed from the leader back to back for the
// whole run.
func (b *bench) runLoad(ctx context.Context, op load.Op, leader int, during bool) (*Load, error) {
	before := b.snapCounts(leader)
	cacheBefore := b.scrapeAll()
	var checkpoints, failed int
	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	if during {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				if _, err := b.checkpoint(runCtx, leader); err != nil {
					// The node may have lost leadership on a loaded machine
					// (it then knows no leader for a moment): count it, and
					// go on once it answers again.
					if runCtx.Err() == nil {
						failed++
						b.say("  checkpoint failed (%v); retrying", err)
						select {
						case <-runCtx.Done():
						case <-clock.After(clock.Real, 200*time.Millisecond):
						}
					}
					continue
				}
				checkpoints++
			}
		}()
	}
	cfg := load.Config{Concurrency: b.o.concurrency, Duration: b.o.duration, Warmup: b.o.warmup}
	res, err := load.Run(ctx, cfg, op, reason)
	stop()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	l := loadOf(res)
	l.Cache = cacheDelta(cacheBefore, b.scrapeAll())
	l.Checkpoints, l.CheckpointErrors = checkpoints, failed
	after0, _ := b.gauge(leader, "metad_raft_leader")
	l.LeaderLost = after0 != 1
	after := b.snapCounts(leader)
	l.RaftSnapshots = int(after.persistN - before.persistN)
	return l, nil
}
