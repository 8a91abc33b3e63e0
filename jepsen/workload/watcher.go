package workload

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/jepsen/history"
)

// Watchers follow streams with the raw Watch RPC (G14), not
// client.Watch: the library's resume hides exactly what the checker must
// see (it drops repeated versions and resumes by itself). Each watcher
// follows streamsPerWatcher streams, each in sessions: one Watch call on a
// node drawn at random, cut by the watcher itself after 1–6 s (or by a
// fault), then resumed on another random node with from_version = the
// version of the last event it received. Every session is one history op
// (KindWatch) with In.From and every event delivered, so
// model.CheckWatch can hold each watcher to the stream's committed
// history and each resume to the last event seen. Once the workload has
// stopped, the read-back resumes every watcher one last time up to its
// STARTED event (drainWatchers): its slice then reaches the end of the
// stream's history, which the final evidence lists.

// streamsPerWatcher: how many streams one watcher follows (setFollows in
// the stream-set mix).
const streamsPerWatcher = 2

// watchFollow is one watcher following one stream: its own client id in
// the history, so the checker reads its sessions in order.
type watchFollow struct {
	w      *Workload
	client int
	h      *hint
	rng    *rand.Rand
	last   uint64 // the version of the last event received
}

// runWatchers starts the watchers; wg joins them.
func (w *Workload) runWatchers(ctx context.Context, wg *sync.WaitGroup) {
	if len(w.cfg.WatchClients) == 0 {
		return
	}
	per := streamsPerWatcher
	if w.cfg.Profile == ProfileStreamSet {
		per = setFollows
	}
	for i := range w.cfg.Watchers {
		rng := w.rng(2000 + i)
		for j, si := range rng.Perm(len(w.streams))[:min(per, len(w.streams))] {
			f := &watchFollow{w: w, client: 200 + 10*i + j, h: w.streams[si], rng: w.rng(2100 + 10*i + j)}
			w.follows = append(w.follows, f)
			wg.Add(1)
			go func() { defer wg.Done(); f.run(ctx) }()
		}
	}
}

func (f *watchFollow) run(ctx context.Context) {
	pause := 10 * time.Millisecond
	for alive(ctx) {
		op := f.session(ctx, false)
		if op.Reason == client.ReasonWatchCompacted {
			// The history after f.last is gone on the node this session
			// asked: start afresh (From 0), which the checker allows only
			// right after a WATCH_COMPACTED.
			f.last = 0
		}
		// Back off while sessions fail (a node down, no leader): each is
		// an op in the history.
		if op.Status == history.OK {
			pause = 10 * time.Millisecond
		} else {
			pause = min(2*pause, 500*time.Millisecond)
		}
		sleepCtx(ctx, pause+time.Duration(f.rng.IntN(90))*time.Millisecond)
	}
}

// session runs one Watch call and records it. toStart: end it at the
// STARTED event (the stream's state when the call began), not by a cut.
func (f *watchFollow) session(ctx context.Context, toStart bool) history.Op {
	node := f.rng.IntN(len(f.w.cfg.WatchClients))
	cl := f.w.cfg.WatchClients[node]
	op := history.Op{Kind: history.KindWatch, Client: f.client, Node: f.w.cfg.NodeIDs[node], Stream: f.h.id,
		In: history.Input{From: f.last}, Out: &history.Output{}}
	cut := time.Duration(1000+f.rng.IntN(5000)) * time.Millisecond
	sctx, cancel := context.WithTimeout(ctx, cut)
	defer cancel()
	op.Call = now()
	stream, err := cl.Metad.Watch(sctx, &metadpb.WatchRequest{StreamId: f.h.id, FromVersion: f.last})
	for err == nil {
		var ev *metadpb.WatchEvent
		if ev, err = stream.Recv(); err == nil {
			op.Out.Events = append(op.Out.Events, eventOf(ev))
			f.last = ev.Version
			if toStart && ev.Kind == metadpb.WatchEventKind_WATCH_STARTED {
				cancel()
				break
			}
		}
	}
	op.Return = now()
	op.Status = history.OK
	if err != nil && sctx.Err() == nil {
		// Ended by the server or the network, not by our own cut or the
		// end of the run.
		classify(&op, err, &attempts{}, false)
	}
	op.ID = f.w.cfg.Rec.Add(op)
	return op
}

// drainWatchers resumes every watcher once more, after the workload
// stopped, until its STARTED event: each watcher then holds its stream's
// history to the end. A few tries on random nodes each.
func (w *Workload) drainWatchers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, f := range w.follows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range readBackTries {
				op := f.session(ctx, true)
				if op.Reason == client.ReasonWatchCompacted {
					f.last = 0
				}
				if op.Status == history.OK || ctx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
}

func eventOf(ev *metadpb.WatchEvent) history.Event {
	e := history.Event{Kind: strings.TrimPrefix(ev.Kind.String(), "WATCH_"), Version: ev.Version, End: ev.CommittedEnd,
		Trim: ev.Trim, Epoch: ev.WriterEpoch, At: now()}
	switch ev.Kind {
	case metadpb.WatchEventKind_WATCH_APPENDED:
		r := rangeOf(ev.Range)
		e.Range = &r
		e.Object = &history.Object{Key: ev.Object.GetKey(), Identity: ev.Object.GetIdentity()}
	case metadpb.WatchEventKind_WATCH_GENERATION_PUBLISHED, metadpb.WatchEventKind_WATCH_GENERATION_RETIRED:
		e.View, e.Generation = viewName(ev.View), ev.Generation
		e.Kind = strings.TrimPrefix(e.Kind, "GENERATION_")
	}
	return e
}

// readBackEvidence lists a stream's append evidence linearizably, page by
// page, as one Final op: the committed history CheckWatch holds the
// watchers' APPENDED events to.
func (w *Workload) readBackEvidence(ctx context.Context, h *hint) {
	for i := range readBackTries {
		node := i % len(w.cfg.Clients)
		cl := w.cfg.Clients[node]
		op := history.Op{Kind: history.KindEvidence, Client: 998, Node: w.cfg.NodeIDs[node], Stream: h.id, Final: true,
			Out: &history.Output{}}
		op.Call = now()
		err := w.listEvidence(ctx, cl, h.id, op.Out)
		op.Return = now()
		classify(&op, err, &attempts{}, false)
		if err != nil {
			op.Out = nil
		}
		w.cfg.Rec.Add(op)
		if err == nil || ctx.Err() != nil {
			return
		}
	}
}

func (w *Workload) listEvidence(ctx context.Context, cl *client.Client, stream uint64, out *history.Output) error {
	const page = 500
	var from uint64
	for {
		cctx, cancel := w.opContext(ctx)
		resp, err := client.Call(cctx, cl, cl.Metad.ListEvidence, &metadpb.ListEvidenceRequest{StreamId: stream, From: from, Limit: page})
		cancel()
		if err != nil {
			return err
		}
		for _, e := range resp.Evidence {
			if e.Range.GetEnd() <= from {
				continue // the entry containing from comes again
			}
			ev := history.Evidence{Range: rangeOf(e.Range),
				Object: history.Object{Key: e.Object.GetKey(), Identity: e.Object.GetIdentity()}, Version: e.Version, DataCRC: e.DataCrc32C}
			if b := e.GetBytes(); b != nil {
				ev.Bytes = &history.Bytes{Offset: b.Offset, Length: b.Length}
			}
			out.Evidence = append(out.Evidence, ev)
			from = e.Range.GetEnd()
		}
		if len(resp.Evidence) < page {
			return nil
		}
	}
}
