package fsm

import (
	"slices"
	"testing"

	"github.com/metad/metad/fsm/fsmpb"
)

// TestQuarantinedWalksInBoundedSlices: a walk in slices of any budget and
// limit, resumed from each next key, finds exactly the quarantined records,
// in key order, once each.
func TestQuarantinedWalksInBoundedSlices(t *testing.T) {
	a := newApplier(t, WithInvariantChecks())
	obj := ObjectRef{Key: "o", Identity: "O"}
	a.ok(cmdRegister(obj, 1000))
	var want []IndexKey
	for s := uint64(1); s <= 3; s++ {
		a.ok(cmdCreate(string(rune('a' + s))))
		a.ok(cmdOpen(s))
		for i := uint64(0); i < 4; i++ {
			a.ok(cmdAppend(s, 1, i*10, i*10+10, obj, ByteRange{i, 1}, true))
		}
		a.ok(cmdPublish(s, TopicCompacted, 2, 1, Range{0, 40}, true,
			NewIndexRecord(IndexKey{s, TopicCompacted, 2, 0}, Range{0, 20}, []Range{{1, 2}}, obj, ByteRange{0, 1}),
			NewIndexRecord(IndexKey{s, TopicCompacted, 2, 20}, Range{20, 40}, []Range{{21, 22}}, obj, ByteRange{0, 1})))
		for _, k := range []IndexKey{{s, Committed, 0, 10}, {s, Committed, 0, 30}, {s, TopicCompacted, 2, 20}} {
			if s == 2 && k.View == Committed {
				continue // a stream with only a compacted quarantine
			}
			rec, _ := a.m.RecordFrom(k.Stream, k.View, k.Generation, k.Start)
			if res := a.ok(cmdReport(k, rec.Version, fsmpb.FailureKind_FAILURE_KIND_CORRUPT, "")); !res.Quarantined {
				t.Fatalf("report %v: %v", k, res)
			}
			want = append(want, k)
		}
	}
	for _, budget := range []int{1, 2, 3, 7, 1000} {
		for _, limit := range []int{1, 2, 1000} {
			var got []IndexKey
			var after *IndexKey
			for steps := 0; ; steps++ {
				if steps > 100 {
					t.Fatalf("budget %d limit %d: the walk does not end", budget, limit)
				}
				recs, next := a.m.Quarantined(after, limit, budget)
				for _, r := range recs {
					got = append(got, r.Key)
				}
				if next == nil {
					break
				}
				after = next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("budget %d limit %d: walked %v, want %v", budget, limit, got, want)
			}
		}
	}
}
