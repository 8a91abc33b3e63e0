package main

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/raftstore"
)

// The README's sample outputs are produced here, so none goes stale.
//
// In README.md, the line before the fence of every block that shows what a
// command prints (or what a server logs) is `<!-- sample: NAME -->`.
// TestReadmeSamples runs, for each NAME, the command or the server path
// for real and compares its output with the block. What varies from run
// to run (addresses, terms, indexes, times, durations, hashes, sizes, the
// leader) is masked on both sides by the sample's masks before the
// comparison; everything else — column names, the number and order of
// lines, message wording, keys of log lines — must match exactly, so a
// sample goes stale only by failing here.
//
//	go test ./cmd/metad -run TestReadmeSamples -update
//
// rewrites the README's blocks from the run. The README then shows a real
// run, with three things of the test's shown as the README's: the test
// servers' ports as those of the README's three-node recipe (7410, 7411,
// ... for n1), temporary paths as /var/lib/metad and /var/backups/metad,
// and log lines without their time= (the README's samples leave it out).

var update = flag.Bool("update", false, "rewrite README.md's sample blocks from this run")

const readmePath = "../../README.md"

// sample is one README block's producer and what of it varies.
type sample struct {
	// produce runs the command and returns what it printed.
	produce func(t *testing.T, e *sampleEnv) string
	// masks replace what varies from run to run with placeholders.
	masks []mask
}

// mask replaces every match of re with repl (regexp.ReplaceAllString's
// expansion: $1 keeps a group).
type mask struct {
	re   *regexp.Regexp
	repl string
}

func m(re, repl string) mask { return mask{regexp.MustCompile(re), repl} }

// Masks more than one sample needs.
var (
	maskAddr     = m(`127\.0\.0\.1:\d+`, "ADDR")
	maskDuration = m(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`, "DUR")
	maskHexLong  = m(`\b[0-9a-f]{32,64}\b`, "HEX")
	maskLogTime  = m(`^time=\S+ `, "")
)

// samples is every producer, by the name its README marker gives.
var samples = map[string]sample{
	"status": {produceStatus, []mask{
		maskAddr,
		// TERM, COMMIT, APPLIED, LAST CONTACT and STATE change with the
		// run; the leader is whichever node won.
		m(`(?m)^(\d+\s+n\d\s+ADDR\s+)(Leader|Follower)(\s+true\s+)\d+(\s+)\d+(\s+)\d+(\s+)(\S+)`, "${1}STATE${3}N${4}N${5}N${6}CONTACT"),
		m(`leader n\d;`, "leader NODE;"),
		maskHexLong,
	}},
	"object-commit": {produceObjectCommit, []mask{
		m(`^object objects/[0-9a-f]+ \((\d+ bytes), identity sha256:\S+\) committed to (\d+) streams at version \d+$`,
			"object objects/KEY ($1, identity sha256:HASH) committed to $2 streams at version N"),
		m(`(?m)^\d+(\s+[a-z]+\s+\[)`, "ID$1"), // the STREAM column
	}},
	"object-commit-refused": {produceObjectCommitRefused, []mask{m(`stream \d+`, "stream ID")}},
	"watch": {produceWatch, []mask{
		m(`(?m)^\d+ `, "VERSION "),
		m(`@sha256:\S+`, "@sha256:HASH"),
	}},
	// Which node is the leader changes; the producer picks a follower.
	"trace": {produceTrace, []mask{maskDuration, m(`(?m)^(\s*)n\d+ `, "${1}NODE ")}},
	"audit": {produceAudit, []mask{maskLogTime, m(`remote=\S+`, "remote=ADDR")}},
	"snapshot-save": {produceSnapshotSave, []mask{
		m(`index \d+, term \d+, from n\d+, \S+ \S+, \d+ records`, "index N, term N, from NODE, SIZE, N records"),
		maskHexLong,
	}},
	"snapshot-inspect": {produceSnapshotInspect, []mask{
		// Which member answered, when, at which index and term, the
		// size, the addresses and the hashes.
		maskAddr,
		m(`(?m)^(Size\s+)\S+ \S+ \(\d+ bytes\)`, "${1}SIZE"),
		m(`(?m)^(Taken at\s+)\S+`, "${1}TIME"),
		m(`(?m)^(Taken by\s+)n\d`, "${1}NODE"),
		m(`(?m)^((Index|Term)\s+)\d+`, "${1}N"),
		m(`(?m)^(FSM snapshot\s+format \d+, last command )\d+, \d+ records, body SHA-256 \S+`, "${1}N, N records, body SHA-256 HEX"),
		m(`(?m)^(\S+\s+)\d+$`, "${1}N"), // the TYPE/COUNT table's counts
		maskHexLong,
	}},
	"backup-log": {produceBackupLog, []mask{
		maskLogTime,
		m(`name=metad-[0-9a-f]+-\d{8}T\d{6}\.\d{3}Z-\d{20}\.snap`, "name=BACKUP"),
		m(`\b(index|bytes|records|pruned)=\d+`, "$1=N"),
		m(`sha256=[0-9a-f]+`, "sha256=HEX"),
		m(`took=\S+`, "took=DUR"),
	}},
	"disk-full": {produceDiskFull, []mask{
		m(`has \S+ \S+ free of \S+ \S+, below the \S+ \S+ reserve`, "has SIZE free of SIZE, below the SIZE reserve"),
	}},
	"disk-write-failed": {produceDiskWriteFailed, nil},
	"corrupt-log":       {produceCorruptLog, nil},
}

// sampleEnv is what the producers share: one three-node cluster, started
// on first use, that also takes backups and sends every request's trace
// to the test's collector.
type sampleEnv struct {
	c       *proc.Cluster
	backups string
	traces  *otlpCollector
	logs    string // the directory of a.log and b.log, once made
	snapDir string // where snapshot-save wrote backup.snap
}

func (e *sampleEnv) cluster(t *testing.T) *proc.Cluster {
	t.Helper()
	if e.c != nil {
		return e.c
	}
	// proc.New's directory outlives every subtest: it belongs to the
	// parent test, which created e.
	e.traces = startOTLPCollector(t)
	e.c = proc.New(t, 3, "--backup-interval", "1s", "--backup-to", e.backups, "--backup-retain", "1",
		"--otlp-endpoint", e.traces.addr, "--otlp-insecure", "--trace-sample-ratio", "1")
	e.c.StartAll()
	e.c.WaitFor("a leader known to all", time.Minute, func() bool {
		for i := range e.c.Nodes {
			if e.c.Leader(i) < 0 {
				return false
			}
		}
		return true
	})
	return e.c
}

// asReadme shows the test servers' addresses as the README's recipe gives
// them: node i listens on 127.0.0.1:7400+10i (gRPC), +1 (Raft), +2
// (gossip), +3 (HTTP).
func (e *sampleEnv) asReadme(out string) string {
	var r []string
	for i, nd := range e.c.Nodes {
		p := 7400 + 10*(i+1)
		for j, a := range []string{nd.GRPC, nd.Raft, nd.Gossip, nd.HTTP} {
			r = append(r, a, fmt.Sprintf("127.0.0.1:%d", p+j))
		}
	}
	return strings.NewReplacer(r...).Replace(out)
}

// realign pads the table at the top of out (up to its first blank line)
// again, as the CLI's tabwriter does, after asReadme changed the widths.
func realign(out string) string {
	table, rest, _ := strings.Cut(out, "\n\n")
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0) // status.go's settings
	for _, l := range strings.Split(table, "\n") {
		fmt.Fprintln(w, strings.Join(regexp.MustCompile(`\s{2,}`).Split(l, -1), "\t"))
	}
	_ = w.Flush()
	return b.String() + "\n" + rest
}

// withoutTime drops a log line's leading time=.
func withoutTime(line string) string { return maskLogTime.re.ReplaceAllString(line, "") }

// cli runs the real binary against node i and fails the test unless it
// exits 0.
func (e *sampleEnv) cli(t *testing.T, i int, args ...string) string {
	t.Helper()
	s := &realServer{bin: proc.Binary(t), addr: e.cluster(t).Nodes[i].GRPC}
	out, code := s.run(t, args...)
	if code != 0 {
		t.Fatalf("metad %v: exit %d\n%s", args, code, out)
	}
	return out
}

// readmeBlock is one marked block of the README.
type readmeBlock struct {
	name       string
	start, end int // the lines of the block between its fences, [start, end)
}

var sampleMarker = regexp.MustCompile(`^<!-- sample: ([a-z0-9-]+) -->$`)

// readmeBlocks finds every marked block; a marker not followed by a fence
// fails the test.
func readmeBlocks(t *testing.T, lines []string) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	for i, l := range lines {
		mk := sampleMarker.FindStringSubmatch(l)
		if mk == nil {
			if strings.HasPrefix(l, "<!-- sample") {
				t.Errorf("README line %d: malformed sample marker %q", i+1, l)
			}
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "```" {
			t.Fatalf("README line %d: sample %s is not followed by a bare ``` fence", i+1, mk[1])
		}
		end := slices.Index(lines[i+2:], "```")
		if end < 0 {
			t.Fatalf("README line %d: sample %s has no closing fence", i+1, mk[1])
		}
		blocks = append(blocks, readmeBlock{name: mk[1], start: i + 2, end: i + 2 + end})
	}
	return blocks
}

func readmeLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// TestReadmeSampleMarkersMatchProducers: every marker names a producer,
// every producer has exactly one marker.
func TestReadmeSampleMarkersMatchProducers(t *testing.T) {
	seen := map[string]int{}
	for _, b := range readmeBlocks(t, readmeLines(t)) {
		if _, ok := samples[b.name]; !ok {
			t.Errorf("README sample %q (line %d) has no producer in readme_samples_test.go", b.name, b.start-1)
		}
		seen[b.name]++
	}
	for name := range samples {
		if seen[name] != 1 {
			t.Errorf("producer %q has %d README markers, want 1", name, seen[name])
		}
	}
}

// normalise masks what varies, then makes column padding one space (a
// table's padding follows the widest value, which the masks change) and
// drops trailing blanks.
func (s sample) normalise(text string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		for _, mk := range s.masks {
			l = mk.re.ReplaceAllString(l, mk.repl)
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))] // a trace's tree
		out = append(out, indent+strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(out, "\n")
}

// TestReadmeSamples: each README sample matches what its command prints
// now (see the top of this file; -update rewrites them).
func TestReadmeSamples(t *testing.T) {
	lines := readmeLines(t)
	blocks := readmeBlocks(t, lines)
	e := &sampleEnv{backups: filepath.Join(t.TempDir(), "backups")}
	produced := map[string]string{}
	for _, b := range blocks {
		s, ok := samples[b.name]
		if !ok {
			t.Errorf("README sample %q has no producer", b.name)
			continue
		}
		// Not subtests: the producers share one cluster, which belongs
		// to this test (proc.Cluster fails the test that made it).
		got := strings.TrimRight(s.produce(t, e), "\n")
		produced[b.name] = got
		want := strings.Join(lines[b.start:b.end], "\n")
		if g, w := s.normalise(got), s.normalise(want); g != w && !*update {
			t.Errorf("README sample %q (README.md line %d) is stale; after masking, README (-) and this run (+):\n%s\nthe run printed:\n%s\n"+
				"(go test ./cmd/metad -run TestReadmeSamples -update rewrites it)", b.name, b.start, lineDiff(w, g), got)
		}
	}
	if !*update || t.Failed() {
		return
	}
	// Rewrite from the last block up, so earlier line numbers hold.
	for _, b := range slices.Backward(blocks) {
		if got, ok := produced[b.name]; ok {
			lines = slices.Replace(lines, b.start, b.end, strings.Split(got, "\n")...)
		}
	}
	if err := os.WriteFile(readmePath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineDiff shows, line by line, where the README (-) and the run (+)
// differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		wok, gok := i < len(w), i < len(g)
		if wok {
			wl = w[i]
		}
		if gok {
			gl = g[i]
		}
		switch {
		case wok && gok && wl == gl:
			fmt.Fprintf(&b, "  %s\n", wl)
		default:
			if wok {
				fmt.Fprintf(&b, "- %s\n", wl)
			}
			if gok {
				fmt.Fprintf(&b, "+ %s\n", gl)
			}
		}
	}
	return b.String()
}

// TestReadmeSampleCatchesAStaleBlock: the comparison fails on a renamed
// column, a removed line and a changed wording, and masks what varies.
func TestReadmeSampleCatchesAStaleBlock(t *testing.T) {
	s := samples["status"]
	run := "NODE  ID  ADDRESS          STATE     VOTER  TERM  COMMIT  APPLIED  LAST CONTACT  LOG STORE\n" +
		"1     n1  127.0.0.1:40001  Leader    true   5     17      17       leader        wal\n" +
		"\nleader n1; 3 voters, 3 healthy, quorum 2, tolerates 1 more failure(s)"
	other := "NODE  ID  ADDRESS         STATE     VOTER  TERM  COMMIT  APPLIED  LAST CONTACT  LOG STORE\n" +
		"1     n1  127.0.0.1:7410  Follower  true   2     3       3        6ms           wal\n" +
		"\nleader n3; 3 voters, 3 healthy, quorum 2, tolerates 1 more failure(s)"
	if s.normalise(run) != s.normalise(other) {
		t.Errorf("two runs differ after masking:\n%s", lineDiff(s.normalise(other), s.normalise(run)))
	}
	for name, stale := range map[string]string{
		"renamed column": strings.Replace(other, "LOG STORE", "LOGSTORE", 1),
		"removed line":   strings.Replace(other, "\n\n", "\n", 1),
		"new wording":    strings.Replace(other, "tolerates", "survives", 1),
	} {
		if s.normalise(stale) == s.normalise(run) {
			t.Errorf("%s: not caught", name)
		}
	}
}

// produceStatus: `metad status` of the README's three-node cluster.
func produceStatus(t *testing.T, e *sampleEnv) string {
	c := e.cluster(t)
	c.WaitFor("every member healthy", 30*time.Second, func() bool {
		out, err := runMetad(t, "endpoint", "health", "--addr", c.Nodes[0].GRPC)
		return err == nil && strings.Count(out, " healthy ") == 3
	})
	c.WaitFor("the cluster id and feature level set", 30*time.Second, func() bool { // the leader sets them after its election
		out, err := runMetad(t, "status", "--addr", c.Nodes[0].GRPC)
		return err == nil && strings.Contains(out, "\ncluster id ") && strings.Contains(out, "\ncluster feature level ")
	})
	return realign(e.asReadme(e.cli(t, 0, "status")))
}

// objectCommit runs `metad object commit` as the README does: in a
// directory holding a.log and b.log, parts named after streams a and b.
func (e *sampleEnv) objectCommit(t *testing.T, want int, args ...string) string {
	t.Helper()
	c := e.cluster(t)
	if e.logs == "" {
		e.logs = t.TempDir()
		writeTemp(e.logs, "a.log", "one\ntwo\n")
		writeTemp(e.logs, "b.log", "three\n")
		e.cli(t, 0, "stream", "create", "a")
		e.cli(t, 0, "stream", "create", "b")
	}
	cmd := exec.Command(proc.Binary(t), append([]string{"object", "commit", "a=a.log", "b=b.log"}, args...)...)
	cmd.Dir = e.logs
	cmd.Env = append(os.Environ(), "METAD_ADDR="+c.Nodes[0].GRPC)
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != want {
		t.Fatalf("object commit %v: exit %d (%v), want %d\n%s", args, code, err, want, out)
	}
	return string(out)
}

// produceObjectCommit: the README's first `metad object commit`, of two
// new streams.
func produceObjectCommit(t *testing.T, e *sampleEnv) string {
	return e.objectCommit(t, exitOK, "--count-lines", "--object-dir", filepath.Join(e.cluster(t).Dir, "objects"))
}

// produceObjectCommitRefused: after another commit opened both streams
// again (epoch 2), a commit at epoch 1 for stream a is refused.
func produceObjectCommitRefused(t *testing.T, e *sampleEnv) string {
	objects := filepath.Join(e.cluster(t).Dir, "objects")
	e.objectCommit(t, exitOK, "--object-dir", objects)
	return e.objectCommit(t, exitFailure, "--epoch-of", "a=1", "--object-dir", objects)
}

// produceWatch: `metad stream watch 1` started on a stream with two
// offsets, then an append (a new writer epoch), a trim and a seal, as in
// the README's walk-through. On a server of its own, so that the stream
// is stream 1, as the README's commands have it.
func produceWatch(t *testing.T, e *sampleEnv) string {
	c := proc.New(t, 1)
	c.StartAll()
	c.WaitFor("a leader", time.Minute, func() bool { return c.Leader(0) == 0 })
	s := &realServer{bin: proc.Binary(t), addr: c.Nodes[0].GRPC}
	cli := func(args ...string) {
		t.Helper()
		if out, code := s.run(t, args...); code != 0 {
			t.Fatalf("metad %v: exit %d\n%s", args, code, out)
		}
	}
	cli("stream", "create", "orders")
	cli("append", "1", "--data", "hello", "--count", "2")
	cmd := exec.Command(proc.Binary(t), "stream", "watch", "1", "--addr", c.Nodes[0].GRPC)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	var got []string
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("watch ended after %q: %v", got, lines.Err())
		}
		got = append(got, lines.Text())
		return lines.Text()
	}
	if l := next(); !strings.Contains(l, " STARTED ") {
		t.Fatalf("watch began with %q", l)
	}
	// The watch has begun: what follows it sees.
	cli("append", "1", "--data", "hello")
	cli("stream", "trim", "1", "3")
	cli("stream", "seal", "1")
	for !strings.Contains(next(), " SEALED ") {
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, "\n")
}

// produceAudit: the audit line of a refused `metad raft untombstone n9`
// on the node that answered the CLI, its timestamp left out. (Not
// transfer-leader --to n9: the CLI refuses an id outside the Raft
// configuration itself, so no server would see that call.)
func produceAudit(t *testing.T, e *sampleEnv) string {
	c := e.cluster(t)
	s := &realServer{bin: proc.Binary(t), addr: c.Nodes[0].GRPC}
	if out, code := s.run(t, "raft", "untombstone", "n9"); code != exitNotFound {
		t.Fatalf("untombstone n9: exit %d\n%s", code, out)
	}
	var line string
	c.WaitFor("the audit line", 10*time.Second, func() bool { // servers log after they answer
		for i := range c.Nodes { // whichever member the CLI's call reached
			for _, l := range strings.Split(c.Log(i), "\n") {
				if strings.Contains(l, "msg=audit") && strings.Contains(l, "method=/metad.v1.Cluster/Untombstone") && strings.Contains(l, "via=open") {
					line = l
					return true
				}
			}
		}
		return false
	})
	return withoutTime(line)
}

// produceSnapshotSave: `metad snapshot save backup.snap` from the second
// node, in a directory of its own (the README's relative file name).
func produceSnapshotSave(t *testing.T, e *sampleEnv) string {
	e.snapDir = t.TempDir()
	cmd := exec.Command(proc.Binary(t), "snapshot", "save", "backup.snap", "--addr", e.cluster(t).Nodes[1].GRPC)
	cmd.Dir = e.snapDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	return string(out)
}

// produceSnapshotInspect: `metad snapshot inspect` of the snapshot
// produceSnapshotSave wrote.
func produceSnapshotInspect(t *testing.T, e *sampleEnv) string {
	if e.snapDir == "" {
		t.Fatal("snapshot-inspect needs the snapshot-save sample before it in the README")
	}
	cmd := exec.Command(proc.Binary(t), "snapshot", "inspect", "backup.snap")
	cmd.Dir = e.snapDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("snapshot inspect: %v\n%s", err, out)
	}
	return e.asReadme(string(out))
}

// produceBackupLog: the leader's line for a scheduled backup that pruned
// an older one (--backup-retain 1), its timestamp left out and the test's
// backup directory shown as the README's.
func produceBackupLog(t *testing.T, e *sampleEnv) string {
	c := e.cluster(t)
	var line string
	c.WaitFor("a backup that pruned one", time.Minute, func() bool {
		for i := range c.Nodes {
			for _, l := range strings.Split(c.Log(i), "\n") {
				if strings.Contains(l, `msg="backup taken"`) && !strings.Contains(l, "pruned=0") {
					line = l
					return true
				}
			}
		}
		return false
	})
	return withoutTime(strings.ReplaceAll(line, e.backups, "/var/backups/metad"))
}

// produceDiskFull: `metad stream create` against a real server whose
// --disk-reserve is above what its filesystem has free (the refusal of
// raftstore's propose, mapped to DISK_FULL by api and printed by the
// CLI), the test's data dir shown as the README's.
func produceDiskFull(t *testing.T, e *sampleEnv) string {
	// A reserve 1 GiB above what is free now: the refusal reads as a
	// real one would.
	var st syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &st); err != nil {
		t.Fatal(err)
	}
	reserve := st.Bavail*uint64(st.Bsize) + 1<<30
	c := proc.New(t, 1, "--disk-reserve", fmt.Sprint(reserve))
	c.StartAll()
	c.WaitFor("a leader", time.Minute, func() bool { return c.Leader(0) == 0 })
	s := &realServer{bin: proc.Binary(t), addr: c.Nodes[0].GRPC}
	out, code := s.run(t, "stream", "create", "orders")
	if code != exitRetryable {
		t.Fatalf("stream create on a full disk: exit %d\n%s", code, out)
	}
	return strings.ReplaceAll(out, c.Nodes[0].DataDir, "/var/lib/metad")
}

// produceDiskWriteFailed: what `metad server` prints when an fsync of the
// raft log fails. No disk fault is induced: this is the error raftstore's
// diskFailure.do latches (a *raftstore.DiskWriteError around the
// operating system's *fs.PathError), which node.Server delivers from
// Store.DiskFailed as the server's error, printed by main's errorLine.
func produceDiskWriteFailed(t *testing.T, e *sampleEnv) string {
	seg := "/var/lib/metad/raft/wal/00000000000000000001-0000000000000000.wal"
	err := &raftstore.DiskWriteError{Store: "raft log", Path: seg,
		Err: &fs.PathError{Op: "sync", Path: seg, Err: syscall.EIO}}
	return errorLine(err)
}

// produceCorruptLog: what `metad server` prints when an entry read back
// at start fails its checksum. No corruption is induced here (the
// integration test TestCorruptLogSegmentIsRefusedThenWipedAndRejoined does that): this is the
// *raftstore.CorruptLogError durableLog returns, wrapped as raftstore.Open
// wraps a failure latched while raft started, printed by main's errorLine.
func produceCorruptLog(t *testing.T, e *sampleEnv) string {
	err := fmt.Errorf("raftstore: start raft: %w", &raftstore.CorruptLogError{
		Path: "/var/lib/metad/raft/wal", Index: 12, Term: 3, Stored: 0x46e604be, Read: 0xb48d87bd})
	return errorLine(err)
}
