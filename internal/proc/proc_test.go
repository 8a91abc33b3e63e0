package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServersHaveInvariantsBuiltIn: the binary the tests of real processes
// run is built with metad_invariants, and the check that says so refuses a
// binary built without it.
func TestServersHaveInvariantsBuiltIn(t *testing.T) {
	if err := checkInvariantsBuiltIn(Binary(t)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": "module plain\n\ngo 1.21\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	plain := filepath.Join(dir, "plain")
	cmd := exec.Command("go", "build", "-o", plain, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := checkInvariantsBuiltIn(plain); err == nil || !strings.Contains(err.Error(), "without -tags metad_invariants") {
		t.Fatalf("a binary built without the tag: %v, want refused", err)
	}
}
