package main

import (
	"crypto/sha256"
	"encoding/hex"
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

// TestRefusedObjectCommitKeepsTheEpochs: a commit refused before it could
// commit — a count past the largest offset (the server refuses it too),
// an object the store will not take — opens no stream for write: every
// writer epoch stays where it was (each refusal moved them by one).
func TestRefusedObjectCommitKeepsTheEpochs(t *testing.T) {
	s := startRealServer(t) // stream "s" at epoch 1
	dir := t.TempDir()
	part := writeTemp(dir, "part.bin", "part\n")
	if out, code := s.run(t, "stream", "create", "other"); code != 0 {
		t.Fatalf("create: exit %d\n%s", code, out)
	}
	epochs := func() string {
		t.Helper()
		var e []uint64
		for _, name := range []string{"s", "other"} {
			var desc metadpb.DescribeStreamResponse
			out, code := s.run(t, "stream", "describe", name, "-o", "json")
			if code != 0 {
				t.Fatalf("describe %s: exit %d\n%s", name, code, out)
			}
			unmarshalProto(t, out, &desc)
			e = append(e, desc.Stream.WriterEpoch)
		}
		return fmt.Sprint(e)
	}
	before := epochs()
	blocked := filepath.Join(dir, "a-file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		args []string
		want string
	}{
		{"a count past the largest offset", []string{"other=" + part, "s=" + part, "--count-of", "s=4611686018427387904"},
			"offsets end at 4611686018427387904"},
		{"a count past any uint64 end", []string{"other=" + part, "s=" + part, "--count-of", "s=18446744073709551615"},
			"offsets end at 4611686018427387904"},
		// The local store keeps a key's versions in a directory named by
		// the key's SHA-256: a file in its place refuses the put.
		{"an object the store refuses", []string{"other=" + part, "s=" + part, "--key", "k"}, "not a directory"},
	} {
		if tc.what == "an object the store refuses" {
			sum := sha256.Sum256([]byte("k"))
			if err := os.Rename(blocked, filepath.Join(s.objects, hex.EncodeToString(sum[:]))); err != nil {
				t.Fatal(err)
			}
		}
		out, code := s.run(t, append(append([]string{"object", "commit"}, tc.args...), "--object-dir", s.objects)...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want a refusal saying %q\n%s", tc.what, code, tc.want, out)
		}
		if after := epochs(); after != before {
			t.Errorf("%s: the writer epochs moved from %s to %s", tc.what, before, after)
		}
	}
}
