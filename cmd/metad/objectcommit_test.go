package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metad/metad/api/metadpb"
)

// TestObjectCommit runs `metad object commit` against a real server: two
// streams, by name, get one append each of one object, at one version,
// and read back their own bytes; then a commit with one stale epoch is
// refused whole, naming that stream, and changes no stream.
func TestObjectCommit(t *testing.T) {
	s := startRealServer(t)
	dir := t.TempDir()
	mustRun := func(args ...string) string {
		t.Helper()
		out, code := s.run(t, args...)
		if code != 0 {
			t.Fatalf("metad %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	fa, fb := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(fa, []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fb, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun("stream", "create", "a")
	mustRun("stream", "create", "b")

	var got committedObject
	out := mustRun("object", "commit", "a="+fa, "b="+fb, "--count-lines", "--object-dir", s.objects, "-o", "json")
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if got.Version == 0 || got.Size != 13 || len(got.Appends) != 2 {
		t.Fatalf("commit printed %+v", got)
	}
	for i, want := range []committedPart{
		{Name: "a", Start: 0, End: 2, Offset: 0, Length: 8},
		{Name: "b", Start: 0, End: 1, Offset: 8, Length: 5},
	} {
		a := got.Appends[i]
		if a.Name != want.Name || a.Start != want.Start || a.End != want.End || a.Offset != want.Offset || a.Length != want.Length || a.DataCRC32C == nil {
			t.Errorf("append %d = %+v, want %+v with a data checksum", i, a, want)
		}
	}
	a, b := fmt.Sprint(got.Appends[0].Stream), fmt.Sprint(got.Appends[1].Stream)
	if out := mustRun("read", a, "COMMITTED", "1", "--object-dir", s.objects); out != "one\ntwo\n" {
		t.Errorf("read a at 1 printed %q", out)
	}
	if out := mustRun("read", b, "COMMITTED", "0", "--object-dir", s.objects); out != "three" {
		t.Errorf("read b at 0 printed %q", out)
	}
	for _, id := range []string{a, b} {
		var ev metadpb.ListEvidenceResponse
		unmarshalProto(t, mustRun("evidence", "list", id, "-o", "json"), &ev)
		if len(ev.Evidence) != 1 || ev.Evidence[0].Object.GetKey() != got.Key || ev.Evidence[0].Version != got.Version {
			t.Errorf("stream %s evidence = %v, want one of %s at version %d", id, ev.Evidence, got.Key, got.Version)
		}
	}
	out = mustRun("object", "commit", a+"="+fa, "b="+fb, "--count-of", "b=4", "--object-dir", s.objects)
	if !strings.Contains(out, "[2,3)") || !strings.Contains(out, "[1,5)") {
		t.Errorf("second commit printed\n%s", out)
	}
	if testing.Verbose() {
		t.Log(out)
	}

	// The second commit opened a at epoch 2: epoch 1 is fenced.
	out, code := s.run(t, "object", "commit", "a="+fa, "b="+fb, "--epoch-of", "a=1", "--object-dir", s.objects)
	if code != 1 || !strings.Contains(out, "stream "+a+` (argument "a=`) || !strings.Contains(out, "STALE_EPOCH") || strings.Contains(out, "stream "+b+" ") {
		t.Errorf("commit with a's epoch stale: exit %d, want 1 naming stream %s only\n%s", code, a, out)
	}
	if testing.Verbose() {
		t.Log(out)
	}
	out, code = s.run(t, "object", "commit", "a="+fa, "b="+fb, "--epoch-of", "a=1", "--epoch-of", "b=1", "--object-dir", s.objects, "-o", "json")
	var refused struct{ Refused []refusedPart }
	if code != 1 || json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &refused) != nil || len(refused.Refused) != 2 {
		t.Errorf("commit with both epochs stale: exit %d, want 1 listing both\n%s", code, out)
	}
	for _, r := range refused.Refused {
		if r.Reason != "STALE_EPOCH" || !strings.HasSuffix(r.Field, ".writer_epoch") {
			t.Errorf("refusal %+v, want STALE_EPOCH of a writer_epoch", r)
		}
	}
	for id, end := range map[string]uint64{a: 3, b: 5} {
		var desc metadpb.DescribeStreamResponse
		unmarshalProto(t, mustRun("stream", "describe", id, "-o", "json"), &desc)
		if desc.Stream.CommittedEnd != end {
			t.Errorf("stream %s: committed end %d after the refusals, want %d", id, desc.Stream.CommittedEnd, end)
		}
	}
}
