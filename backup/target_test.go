package backup

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDirTarget: Put makes the directory, leaves no part file on success
// or failure, and List sees backups only; Delete of what is gone is fine.
func TestDirTarget(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "backups")
	tg, err := OpenTarget(t.Context(), "backup-to", dir, noS3)
	if err != nil {
		t.Fatal(err)
	}
	a, b := Name("c", t0, 1), Name("c", t0.Add(1), 2)
	for _, n := range []string{a, b} {
		ref, err := tg.Put(t.Context(), n, func(w io.Writer) error { _, err := io.WriteString(w, n); return err })
		if err != nil {
			t.Fatal(err)
		}
		path, release, err := tg.Fetch(t.Context(), n, ref)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != n {
			t.Fatalf("read back %q, wrote %q", got, n)
		}
		release()
	}
	boom := errors.New("boom")
	if _, err := tg.Put(t.Context(), Name("c", t0, 3), func(w io.Writer) error { _, _ = io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	names, err := tg.List(t.Context())
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{a, b}) {
		t.Fatalf("List = %v, %v; want %v", names, err, []string{a, b})
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("dir holds %v: a part file was left", ents)
	}
	for range 2 {
		if err := tg.Delete(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	if names, _ := tg.List(t.Context()); !slices.Equal(names, []string{b}) {
		t.Fatalf("after delete: %v", names)
	}
}
