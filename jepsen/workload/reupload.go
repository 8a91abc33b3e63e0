package workload

import (
	"context"

	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// reuploadOnce puts a new version of the key of a live append this writer
// committed and registers it (RegisterObject with the new identity), as a
// broker that uploads an object again would:
//
//   - the same bytes (the local store names them with the same identity,
//     S3 with a new VersionId);
//   - other bytes: the append's offsets salted, so bytes of this version
//     can never pass for the append's;
//   - other bytes followed by new offsets, and then an append of those
//     offsets at the committed end naming the new version.
//
// From feature level 3 a key holds many versions: every offset must go on
// resolving to, and reading, the exact (key, identity) and bytes it was
// committed with while those bytes exist (the model checks each read
// against the data checksum its writer committed). Below it the new
// identity replaces the old (newVersion).
func (wr *writer) reuploadOnce(ctx context.Context) {
	var cands []int
	for i, k := range wr.appends {
		if k.rng.End > wr.trim && !k.replaced {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return
	}
	k := wr.appends[cands[wr.rng.IntN(len(cands))]]
	content := k.content
	mode := wr.rng.IntN(3)
	var next history.Range
	switch mode {
	case 1:
		content = history.Content{Offsets: []history.Range{k.rng}, Prefix: wr.rng.IntN(16), Suffix: wr.rng.IntN(16),
			Salt: 1 + wr.rng.Uint64N(1<<20)}
	case 2:
		next = history.Range{Start: wr.end, End: wr.end + uint64(1+wr.rng.IntN(3))}
		content = history.Content{Offsets: []history.Range{k.rng, next}, Prefix: wr.rng.IntN(16), Suffix: wr.rng.IntN(16),
			Salts: []uint64{1 + wr.rng.Uint64N(1<<20), 0}}
	}
	data, parts := model.Layout(wr.h.id, content)
	obj, ok := wr.put(ctx, k.obj.Key, data)
	if !ok {
		return
	}
	of := k.obj
	op := wr.registerOf(ctx, history.KindReupload, obj, uint64(len(data)), content, &of)
	if op.Status == history.OK || op.Status == history.Info {
		wr.newVersion(obj)
	}
	if mode != 2 || op.Status != history.OK {
		return // an append naming a version that may not be registered could be refused
	}
	wr.appendNaming(ctx, known{rng: next, obj: obj, bytes: parts[1], content: content, crc: crcOf(data, parts[1])}, wr.rng.IntN(2) == 0)
}
