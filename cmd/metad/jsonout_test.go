package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/metad/metad/backup"
	"github.com/metad/metad/internal/proc"
)

// snakeKey is a JSON key of the dialect; quotedInt is a string that is an
// integer (protojson's way of writing a 64-bit one). Longer digit strings
// are not integers any field holds (a uint64 has at most 20 digits), so
// random hex ids never count as one.
var (
	snakeKey  = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	quotedInt = regexp.MustCompile(`^-?[0-9]{1,20}$`)
	// durationKey is a key whose number would be a duration in some unit
	// (took_ms): the dialect writes durations as protojson does, "1.5s".
	durationKey = regexp.MustCompile(`_(ns|us|ms|millis|seconds|secs)$`)
	// hexKey is a key whose value is hex (data log's 16-digit digest, a
	// state hash): now and then every digit of one is below a, which is
	// not a quoted integer.
	hexKey = regexp.MustCompile(`(^|_)(digest|hash|sum)$`)
)

// checkDialect checks that out is one or more JSON values (one document,
// or one per line), every object key snake_case, no value a quoted integer.
func checkDialect(out string) error {
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	n := 0
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		n++
		if err := checkDialectValue("", v); err != nil {
			return err
		}
	}
	if n == 0 {
		return errors.New("no JSON value")
	}
	return nil
}

func checkDialectValue(path string, v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if !snakeKey.MatchString(k) {
				return fmt.Errorf("key %s.%s is not snake_case", path, k)
			}
			if _, isNumber := e.(json.Number); isNumber && durationKey.MatchString(k) {
				return fmt.Errorf("%s.%s is a duration as a number: write it as protojson does (\"1.5s\")", path, k)
			}
			if _, isString := e.(string); isString && hexKey.MatchString(k) {
				continue
			}
			if err := checkDialectValue(path+"."+k, e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkDialectValue(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
				return err
			}
		}
	case string:
		if quotedInt.MatchString(v) {
			return fmt.Errorf("%s = %q is a quoted integer", path, v)
		}
	}
	return nil
}

// The checker itself rejects the old dialect.
func TestCheckDialectRejectsTheOldForm(t *testing.T) {
	for _, bad := range []string{``, `{"leaderId": "n1"}`, `{"endpoints": [{"took_ms": 1.9}]}`, `{"nodes": [{"applied_index": "12"}]}`, `{"a": 1} {"writerEpoch": 2}`, `not json`} {
		if checkDialect(bad) == nil {
			t.Errorf("checkDialect accepted %q", bad)
		}
	}
	if err := checkDialect(`{"leader_id": "n1", "nodes": [{"applied_index": 12, "state_hash": "ab"}]}` + "\n{\"b\": 1, \"digest\": \"4131758388111579\"}\n"); err != nil {
		t.Errorf("checkDialect refused the dialect: %v", err)
	}
}

// jsonCommands lists every command of the tree that takes -o/--output: the
// leaves with the flag, their own or inherited.
func jsonCommands(root *cobra.Command) []string {
	var paths []string
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Name() == "help" || cmd.Name() == "completion" {
			return
		}
		if !cmd.HasSubCommands() {
			f := cmd.Flags().Lookup("output")
			if f == nil {
				f = cmd.PersistentFlags().Lookup("output")
			}
			if f == nil {
				f = cmd.InheritedFlags().Lookup("output")
			}
			if f != nil && strings.Contains(f.Usage, "json") {
				paths = append(paths, cmd.CommandPath())
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	sort.Strings(paths)
	return paths
}

// TestJSONDialect runs every command that takes -o json, with valid
// arguments, against a real three-server cluster (offline commands on a
// snapshot file and a stopped server's data dir the test makes), and checks
// each prints the one dialect: JSON, snake_case keys, integers as numbers.
// A command in the tree with no step here fails the test, by name.
func TestJSONDialect(t *testing.T) {
	// No repair scan after the first: the quarantine steps hide an object
	// and put it back, and a scan in between would act on it first.
	c := proc.New(t, 3, "--repair-scan-interval", "1h")
	c.StartAll()
	c.WaitFormed(3)
	addrs := func(skip int) string {
		var a []string
		for i, n := range c.Nodes {
			if i != skip {
				a = append(a, n.GRPC)
			}
		}
		return strings.Join(a, ",")
	}
	s := &realServer{c: c, bin: proc.Binary(t), addr: addrs(-1), objects: filepath.Join(c.Dir, "objects")}
	tmp := t.TempDir()
	part := writeTemp(tmp, "part.bin", "part\n")
	snap := filepath.Join(tmp, "state.snap")
	backups := filepath.Join(tmp, "backups")
	if err := os.Mkdir(backups, 0o700); err != nil {
		t.Fatal(err)
	}

	// What the steps learn from one another.
	var (
		clusterID, key, identity string
		version, pin             uint64
		quarantined              struct{ gen, start, version uint64 }
		victim                   = -1
		unhide                   func()
	)
	decode := func(out string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
	}
	type step struct {
		args  func() []string
		learn func(out string)
		// before runs first (a precondition the step needs).
		before func()
	}
	fixed := func(args ...string) func() []string { return func() []string { return args } }
	steps := []step{
		{args: fixed("version", "-o", "json")},
		{args: fixed("status", "--hash", "-o", "json"), learn: func(out string) {
			var st struct {
				ClusterID string `json:"cluster_id"`
			}
			decode(out, &st)
			clusterID = st.ClusterID
		}},
		{args: fixed("members", "-o", "json")},
		{args: fixed("endpoint", "health", "-o", "json")},
		{args: fixed("raft", "list-peers", "-o", "json")},
		{args: fixed("stream", "create", "s", "-o", "json")},
		{args: fixed("append", "s", "--data", "hello", "--object-dir", s.objects, "-o", "json")},
		{args: fixed("stream", "list", "-o", "json")},
		{args: fixed("stream", "describe", "s", "-o", "json")},
		{args: fixed("read", "s", "COMMITTED", "0", "--object-dir", s.objects, "-o", "json")},
		{args: fixed("resolve", "s", "COMMITTED", "0", "-o", "json"), learn: func(out string) {
			var r struct {
				Target struct {
					Version uint64 `json:"version"`
				} `json:"target"`
			}
			decode(out, &r)
			version = r.Target.Version
		}},
		{args: fixed("evidence", "list", "s", "-o", "json"), learn: func(out string) {
			var ev struct {
				Evidence []struct {
					Object struct {
						Key      string `json:"key"`
						Identity string `json:"identity"`
					} `json:"object"`
				} `json:"evidence"`
			}
			decode(out, &ev)
			if len(ev.Evidence) != 1 {
				t.Fatalf("evidence list: %s", out)
			}
			key, identity = ev.Evidence[0].Object.Key, ev.Evidence[0].Object.Identity
		}},
		{args: fixed("index", "list", "s", "-o", "json")},
		{args: func() []string { return []string{"object", "describe", key, "-o", "json"} }},
		{args: func() []string { return []string{"object", "pin", key, "--ttl", "1m", "-o", "json"} }, learn: func(out string) {
			var p struct {
				PinID uint64 `json:"pin_id"`
			}
			decode(out, &p)
			pin = p.PinID
		}},
		{args: func() []string { return []string{"object", "release", fmt.Sprint(pin), "-o", "json"} }},
		{args: func() []string {
			return []string{"object", "register", "other-key", "--identity", identity, "--size", "5", "-o", "json"}
		}},
		// The store loses the append's object: the report quarantines its
		// record; with the bytes back, the lift verifies them.
		{before: func() { unhide = hideObject(t, s.objects, identity, tmp) },
			args: func() []string {
				return []string{"object", "report", "s", "COMMITTED", fmt.Sprintf("0/0@%d", version), "--kind", "OBJECT_MISSING", "-o", "json"}
			}},
		{args: fixed("quarantine", "list", "-o", "json"), learn: func(out string) {
			var q struct {
				Records []struct {
					Key struct {
						Generation uint64 `json:"generation"`
					} `json:"key"`
					Record struct {
						Range struct {
							Start uint64 `json:"start"`
						} `json:"range"`
					} `json:"record"`
					Version uint64 `json:"version"`
				} `json:"records"`
			}
			decode(out, &q)
			if len(q.Records) != 1 {
				t.Fatalf("quarantine list after a confirmed OBJECT_MISSING: %s", out)
			}
			r := q.Records[0]
			quarantined.gen, quarantined.start, quarantined.version = r.Key.Generation, r.Record.Range.Start, r.Version
		}},
		{before: func() { unhide() },
			args: func() []string {
				return []string{"quarantine", "lift", "s", "COMMITTED", fmt.Sprint(quarantined.gen), fmt.Sprint(quarantined.start),
					fmt.Sprint(quarantined.version), "-o", "json"}
			}},
		{args: fixed("object", "commit", "s="+part, "--object-dir", s.objects, "-o", "json")},
		{args: func() []string {
			return []string{"index", "publish", "s", "--generation", "1", "--coverage", "0-1", "--record", "0-1@" + key,
				"--object-dir", s.objects, "-o", "json"}
		}},
		{args: fixed("index", "retire", "s", "COMMITTED", "1", "-o", "json")},
		{args: fixed("snapshot", "save", snap, "-o", "json")},
		{args: fixed("snapshot", "inspect", snap, "-o", "json")},
		{before: func() {
			b, err := os.ReadFile(snap)
			if err != nil {
				t.Fatal(err)
			}
			name := backup.Name(clusterID, time.Date(2026, 12, 2, 3, 15, 0, 0, time.UTC), 1)
			if err := os.WriteFile(filepath.Join(backups, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, args: fixed("snapshot", "list", "--from", backups, "-o", "json")},
		{args: func() []string {
			return []string{"snapshot", "restore", snap, "--data-dir", filepath.Join(tmp, "restored"), "--node-id", "r1",
				"--raft-addr", proc.FreePort(t), "-o", "json"}
		}},
		{args: fixed("raft", "transfer-leader", "-o", "json")},
		// remove-peer takes out a stopped follower, which untombstone then
		// lets back; its data dir is a stopped server's for the offline
		// commands.
		{before: func() {
			c.WaitFor("a leader", 30*time.Second, func() bool { return c.Leader(0) >= 0 })
			victim = (c.Leader(0) + 1) % 3
			c.Stop(victim)
			s.addr = addrs(victim)
		}, args: func() []string { return []string{"raft", "remove-peer", c.Nodes[victim].ID, "-o", "json"} }},
		{args: func() []string { return []string{"raft", "untombstone", c.Nodes[victim].ID, "-o", "json"} }},
		{args: func() []string {
			return []string{"data", "inspect", "--data-dir", c.Nodes[victim].DataDir, "-o", "json"}
		}},
		{args: func() []string { return []string{"data", "log", "--data-dir", c.Nodes[victim].DataDir, "-o", "json"} }},
		{args: fixed("stream", "trim", "s", "1", "-o", "json")},
		{args: fixed("stream", "seal", "s", "-o", "json")},
		// stream watch and stream delete: watchAndDelete below.
	}

	covered := map[string]bool{"metad stream watch": true, "metad stream delete": true}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		args := st.args()
		path := commandPath(newRootCmd(), args)
		covered[path] = true
		out, code := s.run(t, args...)
		if code != 0 {
			t.Fatalf("metad %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		if err := checkDialect(out); err != nil {
			t.Errorf("%s -o json: %v\n%s", path, err, out)
			continue
		}
		if st.learn != nil {
			st.learn(out)
		}
	}
	watchAndDelete(t, s)

	var missing []string
	for _, p := range jsonCommands(newRootCmd()) {
		if !covered[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Errorf("commands taking -o json with no step in TestJSONDialect: %s", strings.Join(missing, ", "))
	}
}

// hideObject moves the one object with identity out of the store and
// returns the function that puts it back.
func hideObject(t *testing.T, objects, identity, tmp string) func() {
	t.Helper()
	// The store names an object's file by its identity, "sha256-<hex>".
	files, err := filepath.Glob(filepath.Join(objects, "*", strings.ReplaceAll(identity, ":", "-")))
	if err != nil || len(files) != 1 {
		t.Fatalf("objects named %s under %s: %v %v", identity, objects, files, err)
	}
	aside := filepath.Join(tmp, filepath.Base(files[0]))
	if err := os.Rename(files[0], aside); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.Rename(aside, files[0]); err != nil {
			t.Fatal(err)
		}
	}
}

// watchAndDelete watches stream s with -o json, deletes the stream once the
// watch has printed its first event, and checks every event the watch
// printed until the deletion ended it, and the delete's own output.
func watchAndDelete(t *testing.T, s *realServer) {
	t.Helper()
	cmd := exec.Command(s.bin, "stream", "watch", "s", "-o", "json")
	cmd.Env = append(os.Environ(), "METAD_ADDR="+s.addr)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	first, err := r.ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("stream watch printed no event: %v", err)
	}
	out, code := s.run(t, "stream", "delete", "s", "-o", "json")
	if code != 0 {
		_ = cmd.Process.Kill()
		t.Fatalf("stream delete: exit %d\n%s", code, out)
	}
	if err := checkDialect(out); err != nil {
		t.Errorf("metad stream delete -o json: %v\n%s", err, out)
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("stream watch after the deletion: %v", err)
	}
	events := first + string(rest)
	if strings.Count(events, "\n") < 2 {
		t.Errorf("stream watch printed no event after STARTED:\n%s", events)
	}
	if err := checkDialect(events); err != nil {
		t.Errorf("metad stream watch -o json: %v\n%s", err, events)
	}
}
