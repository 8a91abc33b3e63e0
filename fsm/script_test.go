package fsm

// A tiny golden-script runner in the style of etcd-io/raft's interaction
// tests. Each testdata/*.txt file is a sequence of blocks:
//
//	# comments
//	command arg key=value ...
//	----
//	expected output (no blank lines)
//
// separated by blank lines. `go test -run TestScripts -rewrite ./fsm/`
// regenerates the expected outputs. Every script runs on a machine with
// invariant checks, and at its end the runner checks that a snapshot of the
// final state restores to identical bytes.
//
// Time in scripts is a duration since the epoch of machine time: the runner
// stamps each command with "now", which starts at 0 and moves with `tick`.
// See scriptRunner.exec for the commands.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm/fsmpb"
)

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scripts in testdata/")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScriptFile(t, f) })
	}
}

// scriptBlock is one command of a script with the text around it.
type scriptBlock struct {
	pre     []string // comment and blank lines before the command
	line    int      // line number of the command, for messages
	command string
	want    []string
}

func parseScript(t *testing.T, path string, data []byte) (blocks []scriptBlock, trailer []string) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var pre []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			continue
		}
		b := scriptBlock{pre: pre, line: i + 1, command: l}
		pre = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command not followed by ----", path, i+1)
		}
		i += 2
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			b.want = append(b.want, lines[i])
		}
		i-- // the blank line (or EOF) is read by the loop
		blocks = append(blocks, b)
	}
	return blocks, pre
}

func runScriptFile(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, trailer := parseScript(t, path, data)
	r := newScriptRunner(t)
	var out strings.Builder
	for _, b := range blocks {
		got := r.exec(path, b.line, b.command)
		gotLines := strings.Split(strings.TrimRight(got, "\n"), "\n")
		for _, p := range b.pre {
			out.WriteString(p + "\n")
		}
		out.WriteString(b.command + "\n----\n" + strings.Join(gotLines, "\n") + "\n")
		if !*flagRewrite && !slices.Equal(gotLines, b.want) {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", path, b.line, b.command,
				strings.Join(gotLines, "\n"), strings.Join(b.want, "\n"))
		}
	}
	for _, p := range trailer {
		out.WriteString(p + "\n")
	}
	r.checkRoundTrip()
	if *flagRewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type scriptRunner struct {
	t   *testing.T
	m   *Machine
	idx uint64
	now int64 // stamp of the next command, nanoseconds
}

func newScriptRunner(t *testing.T) *scriptRunner {
	return &scriptRunner{t: t, m: newTestMachine(WithInvariantChecks())}
}

// scriptArgs are the key=value (or bare key) arguments of one command.
type scriptArgs struct {
	t     *testing.T
	where string
	kv    [][2]string
	used  map[int]bool
}

func parseArgs(t *testing.T, where string, fields []string) *scriptArgs {
	a := &scriptArgs{t: t, where: where, used: map[int]bool{}}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		a.kv = append(a.kv, [2]string{k, v})
	}
	return a
}

func (a *scriptArgs) fatalf(format string, args ...any) {
	a.t.Helper()
	a.t.Fatalf("%s: %s", a.where, fmt.Sprintf(format, args...))
}

func (a *scriptArgs) all(key string) []string {
	var out []string
	for i, kv := range a.kv {
		if kv[0] == key {
			a.used[i] = true
			out = append(out, kv[1])
		}
	}
	return out
}

func (a *scriptArgs) str(key, def string) string {
	if v := a.all(key); len(v) > 0 {
		return v[len(v)-1]
	}
	return def
}

func (a *scriptArgs) has(key string) bool { return len(a.all(key)) > 0 }

func (a *scriptArgs) u64(key string, def uint64) uint64 {
	v := a.str(key, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		a.fatalf("%s=%q: %v", key, v, err)
	}
	return n
}

func (a *scriptArgs) dur(key string, def time.Duration) time.Duration {
	v := a.str(key, "")
	if v == "" {
		return def
	}
	return a.parseDur(v)
}

func (a *scriptArgs) parseDur(v string) time.Duration {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(n)
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		a.fatalf("duration %q: %v", v, err)
	}
	return d
}

func (a *scriptArgs) view(key string) View {
	v := a.str(key, "COMMITTED")
	if n, ok := fsmpb.View_value[v]; ok {
		return View(n)
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		a.fatalf("view %q", v)
	}
	return View(n)
}

func (a *scriptArgs) parseRange(v string) Range {
	s, e, ok := strings.Cut(v, "-")
	if !ok {
		a.fatalf("range %q is not START-END", v)
	}
	return Range{a.parseU64(s), a.parseU64(e)}
}

func (a *scriptArgs) parseU64(v string) uint64 {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		a.fatalf("number %q: %v", v, err)
	}
	return n
}

// bytes parses OFF+LEN.
func (a *scriptArgs) parseBytes(v string) ByteRange {
	o, l, ok := strings.Cut(v, "+")
	if !ok {
		a.fatalf("byte range %q is not OFF+LEN", v)
	}
	return ByteRange{a.parseU64(o), a.parseU64(l)}
}

func (a *scriptArgs) obj() ObjectRef {
	return ObjectRef{Key: a.str("obj", ""), Identity: a.str("id", "")}
}

// record parses START-END[:S-E,S-E...]@KEY/IDENTITY/OFF+LEN[!], computing the
// checksum for key; a trailing "!" corrupts it.
func (a *scriptArgs) record(spec string, key IndexKey) *fsmpb.IndexRecord {
	bad := strings.HasSuffix(spec, "!")
	spec = strings.TrimSuffix(spec, "!")
	rs, rest, ok := strings.Cut(spec, "@")
	if !ok {
		a.fatalf("record %q has no @", spec)
	}
	span, survs, _ := strings.Cut(rs, ":")
	rng := a.parseRange(span)
	var survivors []Range
	if survs != "" {
		for _, s := range strings.Split(survs, ",") {
			survivors = append(survivors, a.parseRange(s))
		}
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		a.fatalf("record %q: want KEY/IDENTITY/OFF+LEN after @", spec)
	}
	key.Start = rng.Start
	rec := NewIndexRecord(key, rng, survivors, ObjectRef{parts[0], parts[1]}, a.parseBytes(parts[2]))
	if bad {
		rec.Checksum ^= 1
	}
	return rec
}

// objectAppend parses STREAM:EPOCH:START-END:OFF+LEN[:index][:crc=HEX],
// one append of a stream-set object.
func (a *scriptArgs) objectAppend(spec string) *fsmpb.ObjectAppend {
	parts := strings.Split(spec, ":")
	if len(parts) < 4 {
		a.fatalf("part %q: want STREAM:EPOCH:START-END:OFF+LEN[:index][:crc=HEX]", spec)
	}
	rng := a.parseRange(parts[2])
	p := &fsmpb.ObjectAppend{
		StreamId: a.parseU64(parts[0]), WriterEpoch: a.parseU64(parts[1]),
		ExpectedStart: rng.Start, End: rng.End, Bytes: a.parseBytes(parts[3]).PB(),
	}
	for _, opt := range parts[4:] {
		switch {
		case opt == "index":
			p.IndexGen0 = true
		case strings.HasPrefix(opt, "crc="):
			crc, err := strconv.ParseUint(strings.TrimPrefix(opt, "crc="), 16, 32)
			if err != nil {
				a.fatalf("part %q: %v", spec, err)
			}
			p.DataCrc32C = checksum.Data{CRC: uint32(crc), Set: true}.Ptr()
		default:
			a.fatalf("part %q: unknown option %q", spec, opt)
		}
	}
	return p
}

func (a *scriptArgs) done() {
	for i, kv := range a.kv {
		if !a.used[i] {
			a.fatalf("unknown argument %q", kv[0])
		}
	}
}

// exec runs one script command and returns its output.
func (r *scriptRunner) exec(path string, line int, command string) string {
	r.t.Helper()
	fields := strings.Fields(command)
	a := parseArgs(r.t, fmt.Sprintf("%s:%d", path, line), fields[1:])
	var out string
	switch name := fields[0]; name {
	case "tick":
		if len(fields) != 2 {
			a.fatalf("tick DURATION")
		}
		r.now += int64(a.parseDur(fields[1]))
		a.kv = nil
		out = "now=" + fmtTime(r.now)
	case "dump":
		out = r.dump(a)
	case "get":
		out = r.get(a)
	case "evidence":
		e, ok := r.m.EvidenceAt(a.u64("s", 1), a.u64("at", 0))
		out = "none"
		if ok {
			out = fmtEvidence(e)
		}
	default:
		cmd := r.command(name, a)
		cmd.RequestId = a.str("rid", "")
		cmd.StampUnixNano = r.now
		if a.has("stamp") {
			cmd.StampUnixNano = int64(a.dur("stamp", 0))
		}
		a.done()
		r.idx++
		out = fmtResult(r.m.Apply(r.idx, cmd))
		if name == "level" {
			out += fmt.Sprintf(" level=%d", r.m.Level())
		}
	}
	a.done()
	return out
}

// command builds the command named by a script line.
func (r *scriptRunner) command(name string, a *scriptArgs) *fsmpb.Command {
	s := a.u64("s", 1)
	switch name {
	case "create":
		return cmdCreate(a.str("name", ""))
	case "open":
		return cmdOpen(s)
	case "append":
		cmd := cmdAppend(s, a.u64("epoch", 1), a.u64("start", 0), a.u64("end", 0), a.obj(),
			a.parseBytes(a.str("bytes", "0+0")), a.has("index"))
		if a.has("crc") {
			crc, err := strconv.ParseUint(a.str("crc", ""), 16, 32)
			if err != nil {
				panic(fmt.Sprintf("crc=%q: %v", a.str("crc", ""), err))
			}
			cmd.GetCommitAppend().DataCrc32C = checksum.Data{CRC: uint32(crc), Set: true}.Ptr()
		}
		return cmd
	case "object":
		c := &fsmpb.CommitObject{Object: a.obj().PB(), Size: a.u64("size", 0)}
		for _, spec := range a.all("part") {
			c.Appends = append(c.Appends, a.objectAppend(spec))
		}
		return &fsmpb.Command{Op: &fsmpb.Command_CommitObject{CommitObject: c}}
	case "publish":
		view, gen := a.view("view"), a.u64("gen", 1)
		var recs []*fsmpb.IndexRecord
		for _, spec := range a.all("rec") {
			recs = append(recs, a.record(spec, IndexKey{Stream: s, View: view, Generation: gen}))
		}
		var cover Range
		if c := a.str("cover", ""); c != "" {
			cover = a.parseRange(c)
		}
		return cmdPublish(s, view, gen, a.u64("epoch", 1), cover, a.has("complete"), recs...)
	case "retire":
		return cmdRetire(s, a.view("view"), a.u64("gen", 1))
	case "trim":
		return cmdTrim(s, a.u64("to", 0))
	case "seal":
		return cmdSeal(s)
	case "delete":
		return cmdDelete(s)
	case "register":
		return cmdRegister(a.obj(), a.u64("size", 0))
	case "lift":
		key := IndexKey{Stream: s, View: a.view("view"), Generation: a.u64("gen", 0), Start: a.u64("start", 0)}
		return &fsmpb.Command{Op: &fsmpb.Command_LiftQuarantine{LiftQuarantine: &fsmpb.LiftQuarantine{Key: key.PB(), Version: a.u64("ver", 0)}}}
	case "level":
		return &fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: uint32(a.u64("to", 0))}}}
	case "tombstone":
		return &fsmpb.Command{Op: &fsmpb.Command_AddTombstone{AddTombstone: &fsmpb.AddTombstone{
			NodeId: a.str("id", ""), Incarnation: a.str("inc", "")}}}
	case "untombstone":
		return &fsmpb.Command{Op: &fsmpb.Command_LiftTombstone{LiftTombstone: &fsmpb.LiftTombstone{NodeId: a.str("id", "")}}}
	case "pin":
		return cmdPin(a.obj(), a.str("holder", "h"), int64(a.dur("ttl", 0)))
	case "release":
		return cmdRelease(a.u64("pin", 0))
	case "deleting":
		return cmdDeleting(a.obj())
	case "deleted":
		return cmdDeleted(a.obj())
	case "report":
		kind := fsmpb.FailureKind(fsmpb.FailureKind_value["FAILURE_KIND_"+a.str("kind", "")])
		if n, err := strconv.ParseInt(a.str("kind", ""), 10, 32); err == nil {
			kind = fsmpb.FailureKind(n)
		}
		key := IndexKey{Stream: s, View: a.view("view"), Generation: a.u64("gen", 0), Start: a.u64("start", 0)}
		return cmdReport(key, a.u64("ver", 0), kind, a.str("detail", ""))
	case "repair":
		var replace []*fsmpb.RecordVersion
		for _, rv := range a.all("replace") {
			st, ver, ok := strings.Cut(rv, "@")
			if !ok {
				a.fatalf("replace %q is not START@VERSION", rv)
			}
			replace = append(replace, &fsmpb.RecordVersion{Start: a.parseU64(st), Version: a.parseU64(ver)})
		}
		rec := a.record(a.str("rec", ""), IndexKey{Stream: s, View: Committed})
		return cmdRepair(s, a.u64("ev", 0), a.u64("evver", 0), replace, rec)
	}
	a.fatalf("unknown command %q", name)
	return nil
}

func (r *scriptRunner) get(a *scriptArgs) string {
	rec, ok := r.m.RecordFrom(a.u64("s", 1), a.view("view"), a.u64("gen", 0), a.u64("at", 0))
	if !ok {
		return "none"
	}
	return fmt.Sprintf("g%d %s", rec.Key.Generation, fmtRecord(rec))
}

func (r *scriptRunner) checkRoundTrip() {
	r.t.Helper()
	var a, b bytes.Buffer
	if err := r.m.Clone().WriteSnapshot(&a); err != nil {
		r.t.Fatal(err)
	}
	m2, err := Restore(bytes.NewReader(a.Bytes()), WithInvariantChecks())
	if err != nil {
		r.t.Fatalf("restore of the final state: %v", err)
	}
	if err := m2.WriteSnapshot(&b); err != nil {
		r.t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		r.t.Fatal("snapshot of the final state does not restore to identical bytes")
	}
}

// dump prints the state. Arguments choose a part: s=ID (one stream),
// objects, pins, dedup; none: everything.
func (r *scriptRunner) dump(a *scriptArgs) string {
	var b strings.Builder
	all := len(a.kv) == 0
	if a.has("s") {
		r.dumpStream(&b, a.u64("s", 0))
	}
	if all {
		fmt.Fprintf(&b, "clock=%s applied=%d\n", fmtTime(r.m.Clock()), r.m.AppliedIndex())
		for _, s := range r.m.Streams(0, 1<<30) {
			r.dumpStream(&b, s.ID)
		}
	}
	if all || a.has("objects") {
		for _, o := range r.m.Objects(ObjectRef{}, 1<<30) {
			b.WriteString(fmtObject(o) + "\n")
		}
	}
	if all || a.has("pins") {
		for _, p := range r.m.Pins(0, 1<<30) {
			b.WriteString(fmtPin(p) + "\n")
		}
	}
	if all || a.has("dedup") {
		r.m.dedup.Ascend(func(d dedupEntry) bool {
			fmt.Fprintf(&b, "dedup %q at=%s -> %s\n", d.requestID, fmtTime(d.at), fmtResult(d.result))
			return true
		})
	}
	if all || a.has("tombstones") {
		for _, t := range r.m.Tombstones() {
			fmt.Fprintf(&b, "tombstone %s inc=%q v=%d at=%s\n", t.NodeID, t.Incarnation, t.Version, fmtTime(t.AtUnixNano))
		}
	}
	if b.Len() == 0 {
		return "empty"
	}
	return b.String()
}

func (r *scriptRunner) dumpStream(b *strings.Builder, id uint64) {
	s, ok := r.m.Stream(id)
	if !ok {
		fmt.Fprintf(b, "stream %d not found\n", id)
		return
	}
	fmt.Fprintf(b, "stream %d %q %s epoch=%d v=%d trim=%d end=%d created=%d\n", s.ID, s.Name,
		strings.TrimPrefix(s.Status.String(), "STREAM_STATUS_"), s.WriterEpoch, s.Version, s.Trim, s.CommittedEnd, s.CreatedVersion)
	for _, e := range r.m.Evidence(id, 0, 1<<30) {
		b.WriteString("  evidence " + fmtEvidence(e) + "\n")
	}
	for _, v := range []View{Committed, TopicCompacted} {
		last, has := r.m.LastGeneration(id, v)
		gens := r.m.Generations(id, v)
		if !has && len(gens) == 0 {
			continue
		}
		fmt.Fprintf(b, "  %s last=%d\n", v, last)
		slices.Reverse(gens)
		for _, g := range gens {
			fmt.Fprintf(b, "    gen %d %s v=%d cover=%v records=%d\n", g.Number,
				strings.TrimPrefix(g.Status.String(), "GENERATION_STATUS_"), g.Version, g.Coverage, g.Records)
			for _, rec := range r.m.Records(id, v, g.Number, 0, 1<<30) {
				b.WriteString("      " + fmtRecord(rec) + "\n")
			}
		}
	}
}

func fmtTime(ns int64) string { return time.Duration(ns).String() }

func fmtRecord(r RecordInfo) string {
	var b strings.Builder
	b.WriteString(r.Range.String())
	if len(r.Survivors) > 0 {
		parts := make([]string, len(r.Survivors))
		for i, s := range r.Survivors {
			parts[i] = s.String()
		}
		b.WriteString("{" + strings.Join(parts, " ") + "}")
	}
	sum := "ok"
	if !r.Verify() {
		sum = "BAD"
	}
	fmt.Fprintf(&b, " %s %d+%d %s v=%d sum=%s", r.Object, r.Bytes.Offset, r.Bytes.Length,
		strings.TrimPrefix(r.Status.String(), "RECORD_STATUS_"), r.Version, sum)
	if r.Data.Set {
		b.WriteString(" data=" + r.Data.String())
	}
	return b.String()
}

func fmtEvidence(e EvidenceInfo) string {
	s := fmt.Sprintf("%v %s %d+%d epoch=%d v=%d", e.Range, e.Object, e.Bytes.Offset, e.Bytes.Length, e.WriterEpoch, e.Version)
	if e.Data.Set {
		s += " data=" + e.Data.String()
	}
	return s
}

func fmtObject(o ObjectInfo) string {
	return fmt.Sprintf("object %s %s size=%d v=%d refs=%d idle=%s pins=%d maxexpiry=%s", o.Ref,
		strings.TrimPrefix(o.Status.String(), "OBJECT_STATUS_"), o.Size, o.Version, o.References,
		fmtTime(o.IdleSince), o.Pins, fmtTime(o.PinMaxExpiry))
}

func fmtPin(p PinInfo) string {
	return fmt.Sprintf("pin %d %s holder=%q ttl=%s expiry=%s v=%d", p.ID, p.Object, p.Holder,
		fmtTime(p.TTL), fmtTime(p.Expiry), p.Version)
}

// fmtResult prints a result with only the fields that are set.
func fmtResult(res *fsmpb.Result) string {
	var b strings.Builder
	if rej := res.Rejection; rej != nil {
		fmt.Fprintf(&b, "rejected %s field=%s", rej.Code, rej.Field)
	} else {
		b.WriteString("ok")
	}
	fmt.Fprintf(&b, " v=%d", res.Version)
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{"stream", res.StreamId}, {"epoch", res.WriterEpoch}, {"end", res.CommittedEnd},
		{"trim", res.Trim}, {"gen", res.Generation}, {"pin", res.PinId},
	} {
		if f.v != 0 {
			fmt.Fprintf(&b, " %s=%d", f.name, f.v)
		}
	}
	if res.PinExpiryUnixNano != 0 {
		b.WriteString(" expiry=" + fmtTime(res.PinExpiryUnixNano))
	}
	if res.Quarantined {
		b.WriteString(" quarantined")
	}
	if res.Deduplicated {
		b.WriteString(" deduplicated")
	}
	if rej := res.Rejection; rej != nil {
		b.WriteString(": " + rej.Message)
	}
	for _, r := range res.AppendRejections {
		fmt.Fprintf(&b, "\n  appends[%d] stream=%d %s field=%s", r.Index, r.StreamId, r.Rejection.Code, r.Rejection.Field)
		if r.CommittedEnd != 0 {
			fmt.Fprintf(&b, " end=%d", r.CommittedEnd)
		}
		if r.WriterEpoch != 0 {
			fmt.Fprintf(&b, " epoch=%d", r.WriterEpoch)
		}
	}
	return b.String()
}
