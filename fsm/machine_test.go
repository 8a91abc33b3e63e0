package fsm

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// applier applies commands at consecutive indexes with a settable stamp.
type applier struct {
	t   testing.TB
	m   *Machine
	idx uint64
	now int64
	// commit, if set, runs after each command (a store's Commit).
	commit func()
}

func newApplier(t testing.TB, opts ...Option) *applier {
	return &applier{t: t, m: New(opts...)}
}

func (a *applier) apply(c *fsmpb.Command) *fsmpb.Result {
	a.idx++
	c.StampUnixNano = a.now
	res := a.m.Apply(a.idx, c)
	if a.commit != nil {
		a.commit()
	}
	return res
}

// ok applies c and fails the test if it is refused.
func (a *applier) ok(c *fsmpb.Command) *fsmpb.Result {
	a.t.Helper()
	res := a.apply(c)
	if res.Rejection != nil {
		a.t.Fatalf("index %d: %v refused: %v", a.idx, c, res.Rejection)
	}
	return res
}

// refused applies c and fails the test unless it is refused with code.
func (a *applier) refused(c *fsmpb.Command, code fsmpb.RejectCode) *fsmpb.Result {
	a.t.Helper()
	res := a.apply(c)
	if res.GetRejection().GetCode() != code {
		a.t.Fatalf("index %d: got %v, want %s", a.idx, res, code)
	}
	return res
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want one containing %q", msg, want)
		}
	}()
	f()
}

func TestApplyIndexMustIncrease(t *testing.T) {
	m := New()
	m.Apply(5, cmdCreate("a"))
	mustPanic(t, "apply index 5 after 5", func() { m.Apply(5, cmdCreate("b")) })
	mustPanic(t, "apply index 4 after 5", func() { m.Apply(4, cmdCreate("b")) })
	mustPanic(t, "apply index 0 after 5", func() { m.Apply(0, cmdCreate("b")) })
	if m.AppliedIndex() != 5 {
		t.Fatalf("applied %d after refused indexes", m.AppliedIndex())
	}
	if _, ok := m.StreamByName("b"); ok {
		t.Fatal("a command at a stale index took effect")
	}
	// Gaps are fine: Raft indexes of non-FSM entries are skipped.
	if res := m.Apply(9, cmdCreate("b")); res.Rejection != nil || res.Version != 9 {
		t.Fatalf("apply after a gap: %v", res)
	}
	if m.AppliedIndex() != 9 {
		t.Fatalf("applied %d, want 9", m.AppliedIndex())
	}
	// The first index may be anything above 0.
	mustPanic(t, "apply index 0 after 0", func() { New().Apply(0, cmdCreate("a")) })
}

func TestApplyEntry(t *testing.T) {
	m := New(WithInvariantChecks())
	data, err := proto.Marshal(cmdCreate("a"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := m.ApplyEntry(1, data); err != nil || res.Rejection != nil || res.StreamId != 1 {
		t.Fatalf("ApplyEntry: %v %v", res, err)
	}
	// An unknown operation (a field number from a newer metad) decodes
	// with no op.
	future := protowire.AppendTag(nil, 99, protowire.BytesType)
	future = protowire.AppendBytes(future, []byte{8, 1})
	for name, entry := range map[string][]byte{
		"garbage":      {0xff, 0xff, 0xff, 0xff},
		"truncated":    data[:len(data)-1],
		"empty":        nil,
		"no op":        mustMarshal(t, &fsmpb.Command{RequestId: "r", StampUnixNano: 5}),
		"unknown op":   future,
		"wrong wire":   protowire.AppendVarint(protowire.AppendTag(nil, 10, protowire.VarintType), 1),
		"invalid utf8": mustMarshalPartial(t, "\xff"),
		"level too high": mustMarshal(t, &fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{
			SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: MaxLevel + 1}}}),
	} {
		t.Run(name, func(t *testing.T) {
			before, _, _ := m.StateHash()
			res, err := m.ApplyEntry(2, entry)
			if !errors.Is(err, ErrUnsupported) || res != nil || !strings.Contains(err.Error(), "entry 2") {
				t.Fatalf("ApplyEntry: %v %v, want ErrUnsupported naming entry 2", res, err)
			}
			if after, _, _ := m.StateHash(); after != before || m.AppliedIndex() != 1 {
				t.Fatal("an unsupported entry changed the machine")
			}
		})
	}
}

func mustMarshal(t *testing.T, c *fsmpb.Command) []byte {
	t.Helper()
	b, err := proto.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustMarshalPartial encodes a CreateStream with an arbitrary (possibly
// invalid UTF-8) name, which proto.Marshal would refuse.
func mustMarshalPartial(t *testing.T, name string) []byte {
	inner := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), name)
	return protowire.AppendBytes(protowire.AppendTag(nil, 10, protowire.BytesType), inner)
}

func TestApplyNoOpIsRefusedNotPanicked(t *testing.T) {
	// Apply (unlike ApplyEntry) is given a decoded command; one without an
	// operation is a deterministic refusal.
	res := New(WithInvariantChecks()).Apply(1, &fsmpb.Command{})
	if res.GetRejection().GetField() != "op" {
		t.Fatalf("got %v", res)
	}
}

func TestClockNeverGoesBack(t *testing.T) {
	a := newApplier(t, WithInvariantChecks())
	for _, stamp := range []int64{5, 3, 5, 0, -7, 100, 99, math.MinInt64, 101} {
		before := a.m.Clock()
		a.now = stamp
		a.apply(cmdCreate("s"))
		if want := max(before, stamp); a.m.Clock() != want {
			t.Fatalf("stamp %d after clock %d: clock %d, want %d", stamp, before, a.m.Clock(), want)
		}
	}
}

func TestDedupEvictsBeyondMaxEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the dedup table")
	}
	// Every entry is applied at the same machine time (a leader whose clock
	// lags the machine's stamps them all alike), and the last id sorts
	// first: eviction must still drop the oldest entry, not the newest.
	a := newApplier(t)
	id := func(i int) string { return fmt.Sprintf("id-%06d", i) }
	for i := range MaxDedupEntries {
		a.apply(withID(cmdRelease(uint64(i+1)), id(i)))
	}
	if n := a.m.Counts().Dedup; n != MaxDedupEntries {
		t.Fatalf("%d entries, want %d", n, MaxDedupEntries)
	}
	first := a.ok(withID(cmdCreate("s"), "a-newest"))
	if n := a.m.Counts().Dedup; n != MaxDedupEntries {
		t.Fatalf("%d entries after one more, want %d", n, MaxDedupEntries)
	}
	if res := a.ok(withID(cmdCreate("s"), "a-newest")); !res.Deduplicated || res.Version != first.Version {
		t.Fatalf("the newest request id was evicted: retry gave %v", res)
	}
	// The oldest went: its retry is applied again (a new version).
	if res := a.apply(withID(cmdRelease(1), id(0))); res.Deduplicated {
		t.Fatalf("the oldest entry was kept: %v", res)
	}
	if res := a.apply(withID(cmdRelease(3), id(2))); !res.Deduplicated {
		t.Fatalf("entry 2 was evicted early: %v", res)
	}
	if err := a.m.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestDedupIgnoresOversizedRequestID(t *testing.T) {
	// A request id longer than MaxRequestIDLen is refused by Validate; it
	// must not enter the dedup table, whose memory it bounds.
	a := newApplier(t, WithInvariantChecks())
	long := strings.Repeat("r", MaxRequestIDLen+1)
	for range 2 {
		res := a.refused(withID(cmdCreate("s"), long), fsmpb.RejectCode_INVALID_ARGUMENT)
		if res.Rejection.Field != "request_id" || res.Deduplicated {
			t.Fatalf("got %v", res)
		}
	}
	if n := a.m.Counts().Dedup; n != 0 {
		t.Fatalf("dedup table holds %d entries for an oversized request id", n)
	}
}

func TestDedupResultIsNotAliased(t *testing.T) {
	// The result Apply returns belongs to the caller: changing it must not
	// change what a retry gets, nor the replicated state.
	a := newApplier(t, WithInvariantChecks())
	res := a.ok(withID(cmdCreate("s"), "r"))
	hash, _, _ := a.m.StateHash()
	res.StreamId = 99
	res.Rejection = &fsmpb.Rejection{Code: fsmpb.RejectCode_TOO_LARGE}
	if after, _, _ := a.m.StateHash(); after != hash {
		t.Fatal("changing a returned result changed the state hash")
	}
	retry := a.ok(withID(cmdCreate("s"), "r"))
	if retry.StreamId != 1 || !retry.Deduplicated {
		t.Fatalf("retry got %v", retry)
	}
	retry.StreamId = 98
	if again := a.ok(withID(cmdCreate("s"), "r")); again.StreamId != 1 {
		t.Fatalf("retry got %v after the previous retry's result was changed", again)
	}
}

func TestPinExpiryDoesNotOverflow(t *testing.T) {
	// Machine time near the end of int64 (a leader with a wild clock) must
	// not wrap a pin's expiry into the past: GC would then delete pinned
	// bytes.
	a := newApplier(t, WithInvariantChecks())
	a.now = math.MaxInt64 - int64(time.Second)
	obj := ObjectRef{"o", "A"}
	a.ok(cmdRegister(obj, 1))
	res := a.ok(cmdPin(obj, "h", int64(MaxPinTTL)))
	if res.PinExpiryUnixNano < a.now {
		t.Fatalf("pin taken at %d expires at %d", a.now, res.PinExpiryUnixNano)
	}
	a.ok(cmdDeleting(obj))
	a.refused(cmdDeleted(obj), fsmpb.RejectCode_OBJECT_PINNED)
	if _, ok := a.m.Pin(res.PinId); !ok {
		t.Fatal("an unexpired pin was pruned")
	}
	// Dedup entries at that time are kept for their TTL too.
	a.ok(withID(cmdRegister(ObjectRef{"p", "P"}, 1), "r"))
	if res := a.ok(withID(cmdRegister(ObjectRef{"p", "P"}, 1), "r")); !res.Deduplicated {
		t.Fatal("a dedup entry was forgotten at once")
	}
}

func TestRejectedCommandChangesNothing(t *testing.T) {
	// Every refusal in the scripts is checked by the property tests; here a
	// refusal late in a multi-record publish leaves no trace at all.
	a := newApplier(t, WithInvariantChecks())
	sid := a.ok(cmdCreate("s")).StreamId
	a.ok(cmdOpen(sid))
	obj := ObjectRef{"o", "A"}
	a.ok(cmdRegister(obj, 100))
	a.ok(cmdAppend(sid, 1, 0, 30, obj, ByteRange{0, 30}, true))
	before, _, _ := a.m.StateHash()
	recs := []*fsmpb.IndexRecord{
		NewIndexRecord(IndexKey{sid, TopicCompacted, 1, 0}, Range{0, 10}, []Range{{1, 2}}, obj, ByteRange{0, 1}),
		NewIndexRecord(IndexKey{sid, TopicCompacted, 1, 10}, Range{10, 20}, []Range{{11, 12}}, obj, ByteRange{0, 1}),
		NewIndexRecord(IndexKey{sid, TopicCompacted, 1, 20}, Range{20, 30}, []Range{{21, 22}}, ObjectRef{"o", "B"}, ByteRange{0, 1}),
	}
	a.refused(cmdPublish(sid, TopicCompacted, 1, 1, Range{0, 30}, true, recs...), fsmpb.RejectCode_IDENTITY_MISMATCH)
	if after, _, _ := a.m.StateHash(); after != before {
		t.Fatal("a refused publish changed the state")
	}
	if _, ok := a.m.LastGeneration(sid, TopicCompacted); ok {
		t.Fatal("a refused publish took a generation number")
	}
}

func TestQueries(t *testing.T) {
	a := newApplier(t, WithInvariantChecks())
	for i := range 5 {
		a.ok(cmdCreate(fmt.Sprintf("s%d", i)))
	}
	a.ok(cmdOpen(2))
	objs := []ObjectRef{{"a", "A"}, {"b", "B"}, {"c", "C"}}
	for _, o := range objs {
		a.ok(cmdRegister(o, 10))
	}
	for i := range uint64(6) {
		a.ok(cmdAppend(2, 1, i*10, i*10+10, objs[i%3], ByteRange{i, 10}, i%2 == 0))
	}
	for range 4 {
		a.ok(cmdPin(objs[0], "h", int64(time.Second)))
	}

	if got := ids(a.m.Streams(0, 100)); got != "1 2 3 4 5" {
		t.Fatalf("Streams(0, 100) = %s", got)
	}
	if got := ids(a.m.Streams(2, 2)); got != "3 4" {
		t.Fatalf("Streams(2, 2) = %s", got)
	}
	if got := ids(a.m.Streams(5, 2)); got != "" {
		t.Fatalf("Streams(5, 2) = %s", got)
	}
	if s, ok := a.m.StreamByName("s1"); !ok || s.ID != 2 || s.CommittedEnd != 60 {
		t.Fatalf("StreamByName(s1) = %+v %v", s, ok)
	}
	if _, ok := a.m.StreamByName("nope"); ok {
		t.Fatal("StreamByName found an unknown name")
	}
	if _, ok := a.m.Stream(9); ok {
		t.Fatal("Stream found an unknown id")
	}

	// Gen-0 records exist for appends 0, 2, 4: [0,10) [20,30) [40,50).
	for _, tc := range []struct {
		from  uint64
		limit int
		want  string
	}{
		{0, 10, "0 20 40"}, {9, 10, "0 20 40"}, {10, 10, "20 40"}, {35, 1, "40"},
		{50, 10, ""}, {0, 0, ""}, {0, -1, ""},
	} {
		var got []string
		for _, r := range a.m.Records(2, Committed, 0, tc.from, tc.limit) {
			got = append(got, fmt.Sprint(r.Range.Start))
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("Records(from %d, limit %d) = %q, want %q", tc.from, tc.limit, s, tc.want)
		}
	}
	for _, tc := range []struct {
		from  uint64
		limit int
		want  string
	}{
		{0, 10, "0 10 20 30 40 50"}, {15, 2, "10 20"}, {59, 10, "50"}, {60, 10, ""}, {0, 0, ""},
	} {
		var got []string
		for _, e := range a.m.Evidence(2, tc.from, tc.limit) {
			got = append(got, fmt.Sprint(e.Range.Start))
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("Evidence(from %d, limit %d) = %q, want %q", tc.from, tc.limit, s, tc.want)
		}
	}
	if a.m.Evidence(9, 0, 10) != nil || a.m.Records(9, Committed, 0, 0, 10) != nil {
		t.Error("queries of an unknown stream returned something")
	}
	if _, ok := a.m.EvidenceAt(9, 0); ok {
		t.Error("EvidenceAt of an unknown stream found something")
	}
	if _, ok := a.m.EvidenceAt(2, 60); ok {
		t.Error("EvidenceAt the committed end found something")
	}
	if a.m.Generations(9, Committed) != nil || a.m.Generations(2, 0) != nil {
		t.Error("Generations of an unknown stream or view returned something")
	}
	if _, ok := a.m.LastGeneration(9, Committed); ok {
		t.Error("LastGeneration of an unknown stream")
	}
	if _, ok := a.m.LastGeneration(2, 7); ok {
		t.Error("LastGeneration of an unknown view")
	}
	if _, ok := a.m.RecordFrom(2, 0, 0, 0); ok {
		t.Error("RecordFrom of an unknown view")
	}

	var keys []string
	first := a.m.Objects(ObjectRef{}, 2)
	for _, o := range first {
		keys = append(keys, o.Ref.Key)
	}
	for _, o := range a.m.Objects(first[0].Ref, 5) {
		keys = append(keys, o.Ref.Key)
	}
	for _, o := range a.m.Objects(ObjectRef{Key: "aa"}, 5) {
		keys = append(keys, o.Ref.Key)
	}
	if got := strings.Join(keys, " "); got != "a b b c b c" {
		t.Errorf("Objects pages = %q", got)
	}
	if a.m.Objects(ObjectRef{}, 0) != nil {
		t.Error("Objects with limit 0")
	}
	if o, ok := a.m.Object(first[0].Ref); !ok || o.References != 3 || o.Pins != 4 {
		t.Errorf("Object(a) = %+v", o)
	}
	if _, ok := a.m.Object(ObjectRef{Key: "a", Identity: "other"}); ok {
		t.Error("Object found a version that was never registered")
	}
	if vs := a.m.ObjectVersions("a"); len(vs) != 1 || vs[0].Ref != first[0].Ref {
		t.Errorf("ObjectVersions(a) = %+v", vs)
	}
	if vs := a.m.ObjectVersions("zz"); vs != nil {
		t.Errorf("ObjectVersions of an unknown key = %+v", vs)
	}

	var pins []string
	for _, p := range a.m.Pins(1, 2) {
		pins = append(pins, fmt.Sprint(p.ID))
	}
	if got := strings.Join(pins, " "); got != "2 3" {
		t.Errorf("Pins(1, 2) = %q", got)
	}
	if a.m.Pins(0, 0) != nil {
		t.Error("Pins with limit 0")
	}
	if p, ok := a.m.Pin(4); !ok || p.Expired(a.now) || !p.Expired(p.Expiry) {
		t.Errorf("Pin(4) = %+v", p)
	}
	if _, ok := a.m.Pin(5); ok {
		t.Error("Pin found an unknown id")
	}
	want := Counts{Streams: 5, Evidence: 6, Generations: 5, Records: 3, Objects: 3, Pins: 4}
	if got := a.m.Counts(); got != want {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
}

func ids(ss []StreamInfo) string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprint(s.ID))
	}
	return strings.Join(out, " ")
}

func TestTypes(t *testing.T) {
	r := Range{2, 5}
	for o, want := range map[uint64]bool{1: false, 2: true, 4: true, 5: false} {
		if r.Contains(o) != want {
			t.Errorf("%v.Contains(%d) != %v", r, o, want)
		}
	}
	for s, want := range map[Range]bool{{0, 2}: false, {0, 3}: true, {4, 9}: true, {5, 9}: false, {3, 4}: true} {
		if r.Overlaps(s) != want || s.Overlaps(r) != want {
			t.Errorf("%v.Overlaps(%v) != %v", r, s, want)
		}
	}
	if got := (IndexKey{1, TopicCompacted, 2, 3}).String(); got != "1/TOPIC_COMPACTED/g2/3" {
		t.Errorf("IndexKey.String() = %q", got)
	}
	if ValidView(0) || !ValidView(Committed) || !ValidView(TopicCompacted) || ValidView(3) {
		t.Error("ValidView")
	}
	// The checksum covers every canonical field.
	key, obj, b := IndexKey{1, TopicCompacted, 2, 3}, ObjectRef{"k", "i"}, ByteRange{4, 5}
	base := RecordChecksum(key, Range{3, 9}, []Range{{4, 5}}, obj, b)
	for name, sum := range map[string]uint32{
		"stream":    RecordChecksum(IndexKey{2, TopicCompacted, 2, 3}, Range{3, 9}, []Range{{4, 5}}, obj, b),
		"view":      RecordChecksum(IndexKey{1, Committed, 2, 3}, Range{3, 9}, []Range{{4, 5}}, obj, b),
		"gen":       RecordChecksum(IndexKey{1, TopicCompacted, 3, 3}, Range{3, 9}, []Range{{4, 5}}, obj, b),
		"range":     RecordChecksum(key, Range{3, 8}, []Range{{4, 5}}, obj, b),
		"survivors": RecordChecksum(key, Range{3, 9}, []Range{{4, 6}}, obj, b),
		"no surv":   RecordChecksum(key, Range{3, 9}, nil, obj, b),
		"key":       RecordChecksum(key, Range{3, 9}, []Range{{4, 5}}, ObjectRef{"ki", ""}, b),
		"identity":  RecordChecksum(key, Range{3, 9}, []Range{{4, 5}}, ObjectRef{"k", "j"}, b),
		"bytes":     RecordChecksum(key, Range{3, 9}, []Range{{4, 5}}, obj, ByteRange{5, 4}),
	} {
		if sum == base {
			t.Errorf("changing the %s does not change the checksum", name)
		}
	}
}
