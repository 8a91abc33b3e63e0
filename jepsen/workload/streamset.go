package workload

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// The stream-set mix (ProfileStreamSet): writers that each upload one
// object holding appends to 2–50 streams (drawn per object) and commit it
// with CommitObject, one Raft command, all or none (G16). Readers and
// watchers are the stream mix's; watchers follow more streams each, so
// one watcher sees one object in several of its streams.
//
// A stream-set writer claims the streams an object names while the object
// is in flight, so two writers never race for one stream's end: what
// refuses an object is then this harness's probe (one append of one object
// in ten not at its stream's end, so the whole object must be refused and
// none of it seen), an epoch bump, or an earlier indeterminate object that
// did happen. The writer adopts what a refusal reports, and re-describes
// every stream of an object whose outcome is unknown, as the stream
// writer does after an indeterminate append; the retries of one call carry
// its request id (client.Call), so a retry of an object that did commit is
// answered from the dedup table, not applied twice.
//
// Each CommitObject is recorded as one KindObject op and, for every one
// of its appends, a KindAppend op of that stream (In.Set names the object
// op): acknowledged appends at the object's version when the object was,
// indeterminate when it was, the refused appends rejected with their own
// reason, and the others failed (definitely not applied: nothing of a
// refused object is). So every per-stream check (G1, G2, G8, G14) holds
// each append as it holds a CommitAppend, and model.CheckStreamSets holds
// them to all or none.

const (
	// setStreams is how many streams the stream-set mix creates at least:
	// an object names 2 to setMaxAppends of them.
	setStreams    = 50
	setMaxAppends = 50
	// setWriters is the number of stream-set writers.
	setWriters = 3
	// setKeep: a stream-set writer trims a stream it claims to setKeep
	// offsets below its end once it holds twice that, so the read-back
	// (every offset above the trim) stays small with 50 streams.
	setKeep = 24
	// setFollows is how many streams one watcher follows in this mix.
	setFollows = 4
)

// streamClaims are the streams some stream-set writer's object in flight
// names; the writer that claimed a stream is the only one touching its
// writer struct (end, epoch, trim) until it releases it.
type streamClaims struct {
	mu      sync.Mutex
	claimed map[int]bool
}

// claim takes up to n streams no other object in flight names, at random.
func (c *streamClaims) claim(rng *rand.Rand, total, n int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for _, si := range rng.Perm(total) {
		if len(out) == n {
			break
		}
		if !c.claimed[si] {
			c.claimed[si] = true
			out = append(out, si)
		}
	}
	return out
}

func (c *streamClaims) release(sis []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, si := range sis {
		delete(c.claimed, si)
	}
}

// setWriter commits stream-set objects; only its goroutine touches it.
type setWriter struct {
	w      *Workload
	client int
	rng    *rand.Rand
	keys   int
}

func (w *Workload) runSetWriters(ctx context.Context, wg *sync.WaitGroup) {
	claims := &streamClaims{claimed: map[int]bool{}}
	for i := range setWriters {
		sw := &setWriter{w: w, client: 300 + i, rng: w.rng(3000 + i)}
		wg.Add(1)
		go func() { defer wg.Done(); sw.run(ctx, claims) }()
	}
}

func (sw *setWriter) run(ctx context.Context, claims *streamClaims) {
	for alive(ctx) {
		want := 2 + sw.rng.IntN(min(setMaxAppends, len(sw.w.streams))-1)
		sis := claims.claim(sw.rng, len(sw.w.streams), want)
		if len(sis) >= 2 {
			sw.w.gate.RLock()
			sw.commitOnce(ctx, sis)
			sw.w.gate.RUnlock()
		}
		claims.release(sis)
		sleepCtx(ctx, time.Duration(5+sw.rng.IntN(20))*time.Millisecond)
	}
}

// commitOnce builds one object with an append to each claimed stream,
// puts it and commits it, then adopts the outcome.
func (sw *setWriter) commitOnce(ctx context.Context, sis []int) {
	sw.trimClaimed(ctx, sis)
	probe := -1
	if sw.rng.IntN(10) == 0 {
		probe = sw.rng.IntN(len(sis)) // this append is not at its end: the object must be refused
	}
	var data strings.Builder
	data.WriteString(strings.Repeat("#", sw.rng.IntN(16)))
	apps := make([]history.ObjectAppend, len(sis))
	gen0 := make([]bool, len(sis))
	for i, si := range sis {
		wr := sw.w.writers[si]
		start := wr.end
		if i == probe {
			start++
		}
		r := history.Range{Start: start, End: start + uint64(1+sw.rng.IntN(3))}
		part := model.Payloads(wr.h.id, []history.Range{r})
		b := history.Bytes{Offset: uint64(data.Len()), Length: uint64(len(part))}
		data.WriteString(part)
		apps[i] = history.ObjectAppend{Stream: wr.h.id, Epoch: wr.epoch, ExpectedStart: r.Start, End: r.End, Bytes: b}
		gen0[i] = sw.rng.IntN(10) < 7
	}
	raw := []byte(data.String())
	for i := range apps {
		apps[i].DataCRC = crcOf(raw, apps[i].Bytes)
	}
	sw.keys++
	key := fmt.Sprintf("jepsen/set/w%d-%d", sw.client, sw.keys)
	cctx, cancel := sw.w.opContext(ctx)
	info, err := sw.w.cfg.Objects.Put(cctx, key, bytes.NewReader(raw))
	cancel()
	if err != nil {
		sw.w.cfg.Log.Info("object put failed", "key", key, "err", err)
		return
	}
	obj := history.Object{Key: key, Identity: info.Identity}
	sw.adopt(ctx, sis, sw.commit(ctx, obj, uint64(len(raw)), apps, gen0))
}

// commit calls CommitObject and records it: the object op, then one
// append op per stream. It returns the object op and the refusal, if any.
func (sw *setWriter) commit(ctx context.Context, obj history.Object, size uint64, apps []history.ObjectAppend, gen0 []bool) setOutcome {
	op := history.Op{Kind: history.KindObject, Client: sw.client, Node: "any",
		In: history.Input{RequestID: client.NewRequestID(), Object: &obj, Size: size, Appends: apps}}
	req := &metadpb.CommitObjectRequest{Object: &metadpb.ObjectRef{Key: obj.Key, Identity: obj.Identity}, Size: size,
		RequestId: op.In.RequestID}
	for i, a := range apps {
		req.Appends = append(req.Appends, &metadpb.ObjectAppend{StreamId: a.Stream, WriterEpoch: a.Epoch,
			ExpectedStart: a.ExpectedStart, End: a.End, Bytes: &metadpb.ByteRange{Offset: a.Bytes.Offset, Length: a.Bytes.Length},
			IndexGen0: gen0[i], DataCrc32C: a.DataCRC})
	}
	var at attempts
	op.Call = now()
	resp, err := settle(ctx, sw.w, sw.w.cfg.All, &at, sw.w.cfg.All.Metad.CommitObject, req)
	op.Return = now()
	classify(&op, err, &at, true)
	out := setOutcome{refused: map[int]*metadpb.AppendRefusal{}}
	if err == nil {
		op.Out = &history.Output{Version: resp.Version}
		out.ends = resp.CommittedEnds
	} else if e, ok := client.AsError(err); ok && op.Status == history.Rejected {
		for _, r := range e.Appends {
			out.refused[int(r.Index)] = r
		}
	}
	out.op = sw.w.cfg.Rec.Add(op)
	out.status = op.Status
	for i, a := range apps {
		sw.w.cfg.Rec.Add(projection(op, out, i, a, gen0[i]))
	}
	return out
}

// setOutcome is how a CommitObject ended.
type setOutcome struct {
	op      int
	status  history.Status
	ends    []uint64                       // acknowledged: each append's committed end
	refused map[int]*metadpb.AppendRefusal // rejected: the refused appends by index
}

// projection is append i of a recorded object op as its stream's op.
func projection(obj history.Op, out setOutcome, i int, a history.ObjectAppend, gen0 bool) history.Op {
	object, b := *obj.In.Object, a.Bytes
	op := history.Op{Kind: history.KindAppend, Client: obj.Client, Node: obj.Node, Stream: a.Stream,
		Call: obj.Call, Return: obj.Return, Status: obj.Status, Error: obj.Error,
		In: history.Input{RequestID: obj.In.RequestID, Epoch: a.Epoch, ExpectedStart: a.ExpectedStart, End: a.End,
			Object: &object, Bytes: &b, DataCRC: a.DataCRC, IndexGen0: gen0, Set: out.op}}
	switch obj.Status {
	case history.OK:
		end := a.End
		if i < len(out.ends) {
			end = out.ends[i]
		}
		op.Out = &history.Output{CommittedEnd: end, Version: obj.Out.Version}
	case history.Rejected:
		if r, ok := out.refused[i]; ok {
			op.Reason, op.Error = r.Reason, r.Message
		} else {
			// Not refused itself, but nothing of a refused object is applied.
			op.Status, op.Reason = history.Fail, ""
		}
	default:
		op.Reason = obj.Reason
	}
	return op
}

// adopt updates what the writers know of the claimed streams.
func (sw *setWriter) adopt(ctx context.Context, sis []int, out setOutcome) {
	for i, si := range sis {
		wr := sw.w.writers[si]
		switch out.status {
		case history.OK:
			if i < len(out.ends) {
				wr.end = out.ends[i]
			}
			wr.h.observe(wr.end, wr.trim)
		case history.Info:
			wr.resync(ctx)
		case history.Rejected:
			if r, ok := out.refused[i]; ok && r.Reason == model.ReasonNotAtEnd {
				// The end as the state machine has it, even below what
				// this writer believed (that is for G1, G2 and G16 to
				// report): the stream is claimed, nobody else moves it.
				wr.end = r.CommittedEnd
				wr.h.observe(wr.end, wr.trim)
			} else if ok {
				wr.resync(ctx)
			}
		}
	}
}

// trimClaimed trims every claimed stream holding more than 2*setKeep
// offsets above its trim to setKeep below its end.
func (sw *setWriter) trimClaimed(ctx context.Context, sis []int) {
	for _, si := range sis {
		if wr := sw.w.writers[si]; wr.end >= wr.trim+2*setKeep {
			wr.trimTo(ctx, wr.end-setKeep)
		}
	}
}
