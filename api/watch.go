package api

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/watch"
)

// Watch serves one stream's changes (G14): the held events after
// from_version, then WATCH_STARTED at the linearizable start point, then
// every change as this node applies it.
//
// The start is a linearizable read; the watcher is subscribed inside it,
// under the state machine's read lock, so the backlog from the hub's ring
// ends exactly where the live events begin. Versions are checked to grow
// all the same: a duplicate is dropped, never sent.
func (s *Server) Watch(req *metadpb.WatchRequest, out metadpb.Metad_WatchServer) error {
	if s.hub == nil {
		return fail(metadpb.Reason_UNIMPLEMENTED, "watch is not enabled on this node", "")
	}
	if req.StreamId == 0 {
		return invalidArgument("stream_id", "required")
	}
	s.watchMetrics.streams.Inc()
	defer s.watchMetrics.streams.Dec()
	ctx := out.Context()
	w, backlog, start, err := s.subscribe(ctx, req.StreamId, req.FromVersion)
	if err != nil {
		return err
	}
	defer w.Close()
	ws := &watchSender{out: out, last: req.FromVersion, sent: s.watchMetrics.sent}
	for _, ev := range backlog {
		if err := ws.change(watchEventPB(ev)); err != nil {
			return err
		}
	}
	if err := ws.started(start); err != nil {
		return err
	}
	return s.followLive(ctx, w, ws, req.StreamId)
}

// followLive sends the watcher's events until the stream is deleted, the
// client goes, or the watch is cut off (resumably, from ws.last).
func (s *Server) followLive(ctx context.Context, w *watch.Watcher, ws *watchSender, stream uint64) error {
	for {
		select {
		case ev := <-w.Events():
			if err := ws.change(watchEventPB(*ev)); err != nil {
				return err
			}
			if ev.Kind == watch.Deleted {
				return nil
			}
		case <-w.Done():
			return watchCutOff(w.Err(), stream, ws.last)
		case <-s.watchesEnd:
			return watchCutOff(errShuttingDown, stream, ws.last)
		case <-s.staleWatches():
			return watchCutOff(errLostLeader, stream, ws.last)
		case <-ctx.Done():
			return toStatus(ctx.Err())
		}
	}
}

// watchSender sends one watch's events, each change once, in version order.
type watchSender struct {
	out  metadpb.Metad_WatchServer
	last uint64 // the newest version sent (or the client's from_version)
	sent prometheus.Counter
}

// change sends a change newer than every one sent; an older one is
// dropped, never sent twice.
func (ws *watchSender) change(ev *metadpb.WatchEvent) error {
	if ev.Version <= ws.last {
		return nil
	}
	if err := ws.out.Send(ev); err != nil {
		return err
	}
	ws.last = ev.Version
	ws.sent.Inc()
	return nil
}

// started sends WATCH_STARTED, always, even at a version already seen: it
// is where the watch now stands, not a change.
func (ws *watchSender) started(st watchStart) error {
	if err := ws.out.Send(startedPB(st)); err != nil {
		return err
	}
	ws.last = max(ws.last, st.at)
	ws.sent.Inc()
	return nil
}

// errLostLeader ends the watches of a node that lost its leader.
var errLostLeader = errors.New("api: this node has had no leader for watch.Config.StaleAfter")

// staleWatches is closed when this node has lost its leader for
// Config.Watch.StaleAfter: its watches end, resumably, so that their
// clients go to a member that still follows the cluster.
func (s *Server) staleWatches() <-chan struct{} { return *s.watchStale.Load() }

// checkWatchLiveness runs on the health loop: it ends the watches once
// this node has been without a leader (or without contact from one) for
// StaleAfter, and again every StaleAfter while that lasts.
func (s *Server) checkWatchLiveness(st raftstore.Status, now time.Time) {
	stale := s.cfg.Watch.StaleAfter
	lost := !st.Leader && (st.LeaderID == "" || (!st.LastContact.IsZero() && now.Sub(st.LastContact) > stale))
	switch {
	case !lost:
		s.leaderlessSince = time.Time{}
	case s.leaderlessSince.IsZero():
		s.leaderlessSince = now
	case now.Sub(s.leaderlessSince) >= stale:
		next := make(chan struct{})
		close(*s.watchStale.Swap(&next))
		s.leaderlessSince = now
	}
}

// watchStart is the stream's state at the watch's linearizable start.
type watchStart struct {
	info fsm.StreamInfo
	at   uint64 // the state version (applied index) of the start
}

// subscribe reads the start point linearizably and subscribes to the hub
// within the same read.
func (s *Server) subscribe(ctx context.Context, id, from uint64) (*watch.Watcher, []watch.Event, watchStart, error) {
	var (
		w       *watch.Watcher
		backlog []watch.Event
		start   watchStart
	)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DefaultTimeout)
	defer cancel()
	err := s.read(ctx, metadpb.Consistency_LINEARIZABLE, func(m *fsm.Machine) error {
		info, ok := m.Stream(id)
		if !ok {
			return streamNotFound("stream_id", "stream %d does not exist", id)
		}
		start = watchStart{info: info, at: m.AppliedIndex()}
		if from > start.at {
			return invalidArgument("from_version", "version %d is ahead of the state (%d)", from, start.at)
		}
		if from == 0 {
			from = start.at
		}
		var err error
		w, backlog, err = s.hub.Subscribe(id, from, lastChange(m, info))
		switch {
		case errors.Is(err, watch.ErrCompacted):
			return watchCompacted(info, err)
		case errors.Is(err, watch.ErrTooManyWatchers):
			return build(metadpb.Reason_OVERLOADED, reasons.TooManyWatchers, err.Error(), "", nil, nil)
		}
		return err
	})
	if err != nil {
		return nil, nil, watchStart{}, err
	}
	return w, backlog, start, nil
}

// lastChange is the newest version the state shows for the stream: its own
// and its live generations'. A watch from there has missed nothing.
func lastChange(m *fsm.Machine, info fsm.StreamInfo) uint64 {
	v := info.Version
	for _, view := range []fsm.View{fsm.Committed, fsm.TopicCompacted} {
		for _, g := range m.Generations(info.ID, view) {
			v = max(v, g.Version)
		}
	}
	return v
}

// streamStateMeta is the stream's state as ErrorInfo metadata, for a
// client to re-read from and go on.
func streamStateMeta(info fsm.StreamInfo) map[string]string {
	return map[string]string{
		"stream_id":     strconv.FormatUint(info.ID, 10),
		"version":       strconv.FormatUint(info.Version, 10),
		"committed_end": strconv.FormatUint(info.CommittedEnd, 10),
		"trim":          strconv.FormatUint(info.Trim, 10),
		"status":        metadpb.StreamStatus(info.Status).String(),
	}
}

// watchCompacted: the history after from_version is no longer held here.
// Definite, not retryable as is: the client re-reads and resumes from the
// current state the metadata carries.
func watchCompacted(info fsm.StreamInfo, cause error) error {
	r := metadpb.Reason_WATCH_COMPACTED
	return build(r, reasons.Of(r).Spec,
		cause.Error()+": re-read the stream and watch from its current version", "from_version", nil, streamStateMeta(info))
}

// errShuttingDown ends the watches of a draining server.
var errShuttingDown = errors.New("api: server shutting down")

// endWatches ends every watch and long poll (Drain).
func (s *Server) endWatches() { s.endWatchOne.Do(func() { close(s.watchesEnd) }) }

// watchCutOff ends a watch the hub (or Drain) cut off; resumable from
// last_version, at another member.
func watchCutOff(cause error, stream, last uint64) error {
	reason := metadpb.Reason_WATCH_SLOW_CONSUMER
	switch {
	case errors.Is(cause, watch.ErrReset):
		reason = metadpb.Reason_WATCH_RESET
	case errors.Is(cause, errShuttingDown):
		reason = metadpb.Reason_SHUTTING_DOWN
	case errors.Is(cause, errLostLeader):
		reason = metadpb.Reason_NO_LEADER
	}
	meta := map[string]string{"stream_id": strconv.FormatUint(stream, 10), "last_version": strconv.FormatUint(last, 10)}
	return build(reason, reasons.WatchCutOff, sprintf("%v: resume from version %d", cause, last), "", nil, meta)
}

func watchEventPB(ev watch.Event) *metadpb.WatchEvent {
	out := &metadpb.WatchEvent{
		Kind: watchKindPB[ev.Kind], Version: ev.Version, StreamId: ev.Stream,
	}
	if ev.Kind == watch.Deleted {
		return out
	}
	out.CommittedEnd, out.Trim, out.WriterEpoch = ev.CommittedEnd, ev.Trim, ev.WriterEpoch
	out.Status = metadpb.StreamStatus_ACTIVE
	if ev.Sealed {
		out.Status = metadpb.StreamStatus_SEALED
	}
	switch ev.Kind {
	case watch.Appended:
		out.Range, out.Object, out.Bytes = rangePB(ev.Range), objectPB(ev.Object), byteRangePB(ev.Bytes)
	case watch.Published, watch.Retired:
		out.View, out.Generation = viewToPB(ev.View), ev.Generation
	}
	return out
}

var watchKindPB = map[watch.Kind]metadpb.WatchEventKind{
	watch.Opened:    metadpb.WatchEventKind_WATCH_OPENED,
	watch.Appended:  metadpb.WatchEventKind_WATCH_APPENDED,
	watch.Trimmed:   metadpb.WatchEventKind_WATCH_TRIMMED,
	watch.Sealed:    metadpb.WatchEventKind_WATCH_SEALED,
	watch.Published: metadpb.WatchEventKind_WATCH_GENERATION_PUBLISHED,
	watch.Retired:   metadpb.WatchEventKind_WATCH_GENERATION_RETIRED,
	watch.Deleted:   metadpb.WatchEventKind_WATCH_DELETED,
}

func startedPB(st watchStart) *metadpb.WatchEvent {
	return &metadpb.WatchEvent{
		Kind: metadpb.WatchEventKind_WATCH_STARTED, Version: st.at, StreamId: st.info.ID,
		CommittedEnd: st.info.CommittedEnd, Trim: st.info.Trim, WriterEpoch: st.info.WriterEpoch,
		Status: metadpb.StreamStatus(st.info.Status),
	}
}

// awaitVersion is DescribeStream's long poll: while the stream's version
// is <= min_version, wait (up to wait and most of the call's deadline) for
// a change that moves it. The answer is then read as usual.
func (s *Server) awaitVersion(ctx context.Context, req *metadpb.DescribeStreamRequest) error {
	wait, err := longPollWait(ctx, s.clock.Now(), req)
	if err != nil || wait <= 0 || s.hub == nil {
		return err
	}
	w, err := s.subscribeIfUnmoved(ctx, req)
	if err != nil || w == nil {
		return err
	}
	defer w.Close()
	return s.waitForMove(ctx, w, wait)
}

// longPollWait is how long a DescribeStream may wait, as of now: its wait, within most
// of the call's deadline (a tenth is kept for the answer's own read).
func longPollWait(ctx context.Context, now time.Time, req *metadpb.DescribeStreamRequest) (time.Duration, error) {
	if req.Wait == nil {
		return 0, nil
	}
	if err := req.Wait.CheckValid(); err != nil || req.Wait.AsDuration() < 0 {
		return 0, invalidArgument("wait", "must be a valid, non-negative duration")
	}
	wait := req.Wait.AsDuration()
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, deadline.Sub(now)*9/10)
	}
	return wait, nil
}

// subscribeIfUnmoved subscribes to the stream if its version is still at
// most min_version; nil (answer now) if it moved, does not exist, or there
// is no room for another watcher.
func (s *Server) subscribeIfUnmoved(ctx context.Context, req *metadpb.DescribeStreamRequest) (*watch.Watcher, error) {
	var w *watch.Watcher
	err := s.read(ctx, req.Consistency, func(m *fsm.Machine) error {
		info, ok := m.Stream(req.StreamId)
		if req.Name != "" {
			info, ok = m.StreamByName(req.Name)
		}
		if !ok || info.Version > req.MinVersion {
			return nil // answer now (not found is the answer's to say)
		}
		var err error
		w, _, err = s.hub.Subscribe(info.ID, m.AppliedIndex(), m.AppliedIndex())
		if errors.Is(err, watch.ErrTooManyWatchers) {
			return nil // no room to wait: answer now, the client polls again
		}
		return err
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return w, nil
}

// waitForMove returns once a change moves the stream's version (generation
// events do not), the wait ends, or the watcher or server stops.
func (s *Server) waitForMove(ctx context.Context, w *watch.Watcher, wait time.Duration) error {
	timer := s.clock.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case ev := <-w.Events():
			if ev.Kind != watch.Published && ev.Kind != watch.Retired {
				return nil
			}
		case <-w.Done():
			return nil
		case <-s.watchesEnd:
			return nil
		case <-timer.C():
			return nil
		case <-ctx.Done():
			return toStatus(ctx.Err())
		}
	}
}

// watchMetrics are the watch RPC's metrics.
type watchMetrics struct {
	streams prometheus.Gauge
	sent    prometheus.Counter
}

func newWatchMetrics(reg prometheus.Registerer, hub *watch.Hub) *watchMetrics {
	m := &watchMetrics{
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_watch_streams",
			Help: "Watch RPCs in progress on this node.",
		}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_watch_events_sent_total",
			Help: "Watch events sent to clients (WATCH_STARTED included).",
		}),
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.streams, m.sent)
	if hub != nil {
		reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "metad_watch_cutoffs_total",
				Help: "Watchers cut off because their queue was full (slow consumers).",
			}, func() float64 { return float64(hub.Cutoffs()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "metad_watch_watchers",
				Help: "Watchers registered with the hub (watch RPCs and DescribeStream long polls).",
			}, func() float64 { return float64(hub.Watchers()) }),
		)
	}
	return m
}
