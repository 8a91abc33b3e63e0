package workload

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// writer is the single writer of one stream; only its goroutine touches it.
type writer struct {
	w      *Workload
	h      *hint
	client int
	rng    *rand.Rand
	// What this writer knows of its stream.
	epoch, end, trim uint64
	appends          []known
	gens             [2]viewGens
	keys             int
	weights          []weighted
}

// known is an append this writer knows committed: the exact version
// (key, identity) and byte range it named, the bytes of that version
// (content), and the data checksum committed with it.
type known struct {
	rng      history.Range
	obj      history.Object
	bytes    history.Bytes
	content  history.Content
	crc      *uint32
	replaced bool
}

type viewGens struct {
	last uint64
	live []uint64
}

type weighted struct {
	weight int
	op     func(context.Context)
}

func createReq(name string) *metadpb.CreateStreamRequest {
	return &metadpb.CreateStreamRequest{Name: name, RequestId: client.NewRequestID()}
}

func (w *Workload) newWriter(h *hint, i int) *writer {
	wr := &writer{w: w, h: h, client: i, rng: w.rng(1000 + i)}
	wr.weights = wr.profile(w.cfg.Profile)
	return wr
}

func (wr *writer) profile(p string) []weighted {
	appendGen0 := func(p float64) func(context.Context) {
		return func(ctx context.Context) { wr.appendOnce(ctx, wr.rng.Float64() < p) }
	}
	switch p {
	case ProfileAppend:
		return []weighted{{1, appendGen0(1)}}
	case ProfileResolve:
		return []weighted{{30, appendGen0(0.4)}, {10, wr.trimOnce}, {9, wr.publishOnce(model.Committed)},
			{9, wr.publishOnce(model.TopicCompacted)}, {8, wr.retireOnce}, {2, wr.replaceOnce}, {4, wr.pinWatch},
			{2, wr.openOnce}}
	case ProfileReplace:
		return []weighted{{30, appendGen0(0.9)}, {4, wr.trimOnce}, {8, wr.publishOnce(model.TopicCompacted)},
			{12, wr.replaceOnce}}
	case ProfileReupload:
		return []weighted{{35, appendGen0(0.7)}, {3, wr.trimOnce}, {5, wr.publishOnce(model.Committed)},
			{5, wr.publishOnce(model.TopicCompacted)}, {4, wr.retireOnce}, {2, wr.openOnce}, {14, wr.reuploadOnce},
			{2, wr.replaceOnce}, {1, wr.pinWatch}, {3, wr.describeOnce}}
	}
	return []weighted{{40, appendGen0(0.7)}, {8, wr.trimOnce}, {7, wr.publishOnce(model.Committed)},
		{7, wr.publishOnce(model.TopicCompacted)}, {6, wr.retireOnce}, {3, wr.openOnce}, {2, wr.staleAppend},
		{2, wr.replaceOnce}, {2, wr.reuploadOnce}, {3, wr.pinWatch}, {4, wr.describeOnce}}
}

func (wr *writer) run(ctx context.Context) {
	total := 0
	for _, x := range wr.weights {
		total += x.weight
	}
	for alive(ctx) {
		n := wr.rng.IntN(total)
		for _, x := range wr.weights {
			if n < x.weight {
				wr.w.gate.RLock()
				x.op(ctx)
				wr.w.gate.RUnlock()
				break
			}
			n -= x.weight
		}
		sleepCtx(ctx, time.Duration(wr.rng.IntN(10))*time.Millisecond)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := clock.Real.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// record adds a finished op of this writer.
func (wr *writer) record(op history.Op) history.Op {
	op.Client, op.Stream, op.Node = wr.client, wr.h.id, "any"
	op.ID = wr.w.cfg.Rec.Add(op)
	return op
}

func (wr *writer) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return wr.w.opContext(ctx)
}

// open bumps the writer epoch (OpenForWrite).
func (wr *writer) open(ctx context.Context) error {
	op := history.Op{Kind: history.KindOpen, In: history.Input{RequestID: client.NewRequestID()}}
	var a attempts
	op.Call = now()
	resp, err := settle(ctx, wr.w, wr.w.cfg.All, &a, wr.w.cfg.All.Metad.OpenForWrite,
		&metadpb.OpenForWriteRequest{StreamId: wr.h.id, RequestId: op.In.RequestID})
	op.Return = now()
	classify(&op, err, &a, true)
	if err == nil {
		op.Out = &history.Output{Epoch: resp.WriterEpoch, Version: resp.Version}
		wr.epoch = resp.WriterEpoch
	}
	wr.record(op)
	if op.Status == history.Info {
		wr.resync(ctx)
	}
	return err
}

func (wr *writer) openOnce(ctx context.Context) { _ = wr.open(ctx) }

// describe reads the stream linearizably and adopts what it shows. It
// reports whether the read succeeded.
func (wr *writer) describe(ctx context.Context) bool {
	op := wr.w.describeOp(ctx, wr.w.cfg.All, "any", wr.client, wr.h.id)
	if op.Status != history.OK {
		return false
	}
	out := op.Out
	wr.end, wr.trim, wr.epoch = out.CommittedEnd, out.Trim, max(wr.epoch, out.Epoch)
	for v := range wr.gens {
		wr.gens[v].live = wr.gens[v].live[:0]
	}
	for _, g := range out.Generations {
		if g.View == model.Committed && g.Number == 0 {
			continue
		}
		v := viewIdx(g.View)
		wr.gens[v].live = append(wr.gens[v].live, g.Number)
		wr.gens[v].last = max(wr.gens[v].last, g.Number)
	}
	return true
}

func (wr *writer) describeOnce(ctx context.Context) { wr.describe(ctx) }

// resync re-reads the stream after an indeterminate or refused write,
// trying a few times if the cluster does not answer.
func (wr *writer) resync(ctx context.Context) {
	for range 5 {
		if wr.describe(ctx) || !alive(ctx) {
			return
		}
	}
}

func viewIdx(v string) int {
	if v == model.TopicCompacted {
		return 1
	}
	return 0
}

func viewPB(v string) metadpb.View {
	if v == model.TopicCompacted {
		return metadpb.View_TOPIC_COMPACTED
	}
	return metadpb.View_COMMITTED
}

// putObject stores content under a new key and registers it. It returns
// the object, its bytes and the byte range of each content part, or false.
func (wr *writer) putObject(ctx context.Context, kind string, content history.Content) (history.Object, []byte, []history.Bytes, bool) {
	wr.keys++
	key := fmt.Sprintf("jepsen/s%d/%s-%d-%d", wr.h.id, kind, wr.end, wr.keys)
	data, parts := model.Layout(wr.h.id, content)
	obj, ok := wr.put(ctx, key, data)
	if !ok {
		return obj, nil, nil, false
	}
	op := wr.register(ctx, history.KindRegister, obj, uint64(len(data)), content)
	return obj, data, parts, op.Status == history.OK
}

// crcOf is the data checksum of byte range b of data, as a writer commits
// it (model.DataCRC: CRC-32C).
func crcOf(data []byte, b history.Bytes) *uint32 {
	return model.CRCOf(data[b.Offset : b.Offset+b.Length])
}

// put stores data under key and returns the version's identity, which
// the store decides (the local store's is the bytes' digest; S3's names the
// VersionId and ETag too).
func (wr *writer) put(ctx context.Context, key string, data []byte) (history.Object, bool) {
	cctx, cancel := wr.ctx(ctx)
	defer cancel()
	info, err := wr.w.cfg.Objects.Put(cctx, key, bytes.NewReader(data))
	if err != nil {
		// Expected while a store fault holds; nothing was registered.
		wr.w.cfg.Log.Info("object put failed", "key", key, "err", err)
		return history.Object{Key: key}, false
	}
	return history.Object{Key: key, Identity: info.Identity}, true
}

func (wr *writer) register(ctx context.Context, kind string, obj history.Object, size uint64, content history.Content) history.Op {
	return wr.registerOf(ctx, kind, obj, size, content, nil)
}

// registerOf registers obj; of, for a reupload, is the version it joins.
func (wr *writer) registerOf(ctx context.Context, kind string, obj history.Object, size uint64, content history.Content, of *history.Object) history.Op {
	op := history.Op{Kind: kind, In: history.Input{RequestID: client.NewRequestID(), Object: &obj, Size: size, Content: &content, Of: of}}
	var a attempts
	op.Call = now()
	resp, err := settle(ctx, wr.w, wr.w.cfg.All, &a, wr.w.cfg.All.Metad.RegisterObject, &metadpb.RegisterObjectRequest{
		Object: &metadpb.ObjectRef{Key: obj.Key, Identity: obj.Identity}, Size: size, RequestId: op.In.RequestID})
	op.Return = now()
	classify(&op, err, &a, true)
	if err == nil {
		op.Out = &history.Output{Version: resp.Version}
	}
	return wr.record(op)
}

// appendOnce writes 1–4 offsets: bytes into the object store, the object
// registered, then CommitAppend at the committed end.
func (wr *writer) appendOnce(ctx context.Context, gen0 bool) {
	n := uint64(1 + wr.rng.IntN(4))
	start := wr.end
	content := history.Content{Offsets: []history.Range{{Start: start, End: start + n}}, Prefix: wr.rng.IntN(16), Suffix: wr.rng.IntN(16)}
	obj, data, parts, ok := wr.putObject(ctx, "a", content)
	if !ok {
		return
	}
	wr.appendNaming(ctx, known{rng: history.Range{Start: start, End: start + n}, obj: obj, bytes: parts[0], content: content,
		crc: crcOf(data, parts[0])}, gen0)
}

// appendNaming commits k (at the committed end, naming its version and
// byte range, with its data checksum) and remembers it if it committed.
func (wr *writer) appendNaming(ctx context.Context, k known, gen0 bool) {
	op := wr.commit(ctx, wr.epoch, k.rng.Start, k.rng.End, k.obj, k.bytes, k.crc, gen0)
	switch op.Status {
	case history.OK:
		wr.end = k.rng.End
		wr.appends = append(wr.appends, k)
		wr.h.observe(wr.end, wr.trim)
	case history.Rejected, history.Info:
		wr.resync(ctx)
		if op.Status == history.Info && wr.end == k.rng.End {
			// It did happen: this writer is the stream's only appender.
			wr.appends = append(wr.appends, k)
		}
	}
}

func (wr *writer) commit(ctx context.Context, epoch, start, end uint64, obj history.Object, b history.Bytes, crc *uint32, gen0 bool) history.Op {
	op := history.Op{Kind: history.KindAppend, In: history.Input{RequestID: client.NewRequestID(), Epoch: epoch,
		ExpectedStart: start, End: end, Object: &obj, Bytes: &b, DataCRC: crc, IndexGen0: gen0}}
	var a attempts
	op.Call = now()
	resp, err := settle(ctx, wr.w, wr.w.cfg.All, &a, wr.w.cfg.All.Metad.CommitAppend, &metadpb.CommitAppendRequest{
		StreamId: wr.h.id, WriterEpoch: epoch, ExpectedStart: start, End: end,
		Object: &metadpb.ObjectRef{Key: obj.Key, Identity: obj.Identity},
		Bytes:  &metadpb.ByteRange{Offset: b.Offset, Length: b.Length}, IndexGen0: gen0, RequestId: op.In.RequestID,
		DataCrc32C: crc})
	op.Return = now()
	classify(&op, err, &a, true)
	if err == nil {
		op.Out = &history.Output{CommittedEnd: resp.CommittedEnd, Version: resp.Version}
	}
	return wr.record(op)
}

// staleAppend is G4's probe: an append with a superseded epoch must be
// refused (the model checks the refusal).
func (wr *writer) staleAppend(ctx context.Context) {
	if wr.epoch == 0 || len(wr.appends) == 0 {
		return
	}
	last := wr.appends[len(wr.appends)-1]
	wr.commit(ctx, wr.epoch-1, wr.end, wr.end+1, last.obj, last.bytes, last.crc, true)
}

// trimOnce advances the trim point a little, keeping most of the stream.
func (wr *writer) trimOnce(ctx context.Context) {
	if wr.end < wr.trim+8 {
		return
	}
	wr.trimTo(ctx, wr.trim+1+uint64(wr.rng.IntN(int(wr.end-wr.trim)/3)))
}

func (wr *writer) trimTo(ctx context.Context, to uint64) {
	op := history.Op{Kind: history.KindTrim, In: history.Input{RequestID: client.NewRequestID(), Offset: to}}
	var a attempts
	op.Call = now()
	resp, err := settle(ctx, wr.w, wr.w.cfg.All, &a, wr.w.cfg.All.Metad.Trim,
		&metadpb.TrimRequest{StreamId: wr.h.id, Offset: to, RequestId: op.In.RequestID})
	op.Return = now()
	classify(&op, err, &a, true)
	if err == nil {
		op.Out = &history.Output{Trim: resp.Trim, CommittedEnd: resp.CommittedEnd, Version: resp.Version}
		wr.trim = resp.Trim
		wr.h.observe(wr.end, wr.trim)
	}
	wr.record(op)
	if op.Status == history.Info || op.Status == history.Rejected {
		wr.resync(ctx)
	}
}

// replaceOnce puts new bytes under the key of a live append and registers
// their identity: every record naming the old identity must from then on
// be refused, and its bytes never served (G8).
func (wr *writer) replaceOnce(ctx context.Context) {
	var cands []int
	for i, k := range wr.appends {
		if k.rng.End > wr.trim && !k.replaced {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return
	}
	k := &wr.appends[cands[wr.rng.IntN(len(cands))]]
	content := history.Content{Offsets: []history.Range{k.rng}, Prefix: 20 + wr.rng.IntN(8), Salt: 1 + wr.rng.Uint64N(1<<20)}
	data, _ := model.Layout(wr.h.id, content)
	// The new version first: its identity is the store's to decide. The
	// store is versioned, so the old version stays readable until metad
	// lets GC delete it.
	obj, ok := wr.put(ctx, k.obj.Key, data)
	if !ok {
		return
	}
	op := wr.register(ctx, history.KindReplace, obj, uint64(len(data)), content)
	if op.Status == history.OK || op.Status == history.Info {
		wr.newVersion(obj)
	}
}

// newVersion notes that obj was (perhaps) registered as a new version of
// its key. With one version per key (below feature level 3) every known
// append naming another version of the key is replaced: unreadable by
// design. With many, nothing is.
func (wr *writer) newVersion(obj history.Object) {
	if wr.w.cfg.Level >= history.VersionsLevel {
		return
	}
	for i := range wr.appends {
		if a := &wr.appends[i]; a.obj.Key == obj.Key && a.obj.Identity != obj.Identity {
			a.replaced = true
		}
	}
}

// pinWatch pins the oldest live append's object, trims past it (so GC may
// mark it DELETING) and watches the bytes stay readable for the pin's
// lease (G9).
func (wr *writer) pinWatch(ctx context.Context) {
	var k *known
	for i := range wr.appends {
		if a := &wr.appends[i]; a.rng.End > wr.trim && !a.replaced {
			k = a
			break
		}
	}
	if k == nil || k.rng.End+4 > wr.end {
		return
	}
	ttl := 4 * time.Second
	obj := k.obj
	op := history.Op{Kind: history.KindPin, In: history.Input{RequestID: client.NewRequestID(), Object: &obj, TTLNanos: int64(ttl)}}
	var a attempts
	op.Call = now()
	resp, err := settle(ctx, wr.w, wr.w.cfg.All, &a, wr.w.cfg.All.Metad.Pin, &metadpb.PinRequest{
		Object: &metadpb.ObjectRef{Key: obj.Key, Identity: obj.Identity}, Holder: "jepsen-watch",
		Ttl: durationpb.New(ttl), RequestId: op.In.RequestID})
	op.Return = now()
	classify(&op, err, &a, true)
	if err != nil {
		wr.record(op)
		return
	}
	op.Out = &history.Output{PinID: resp.PinId, Version: resp.Version, Expiry: resp.Expiry.AsTime().UnixNano()}
	b := k.bytes
	wr.w.watchers.Add(1)
	go func() { // owned by the workload: Run waits for watchers
		defer wr.w.watchers.Done()
		op.Out.Watches = wr.w.watch(ctx, obj, b, op.Call+int64(ttl)*9/10)
		wr.record(op)
	}()
	wr.trimTo(ctx, k.rng.End)
}
