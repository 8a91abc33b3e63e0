package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ReleaseBinary builds cmd/metad as it was at commit (a previous release,
// for upgrade tests) from this repository's own history and returns its
// path. The binary is cached under the user's cache directory, keyed by
// commit, so only the first build on a machine pays. It needs the commit
// in the clone's history (a shallow clone fails, saying so).
func ReleaseBinary(t testing.TB, commit string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "metad", "release-"+commit)
	bin := filepath.Join(dir, "metad")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(src)
	archive := fmt.Sprintf("git -C %q archive %s | tar -x -C %q", root, commit, src)
	if out, err := exec.Command("sh", "-c", archive).CombinedOutput(); err != nil {
		t.Fatalf("extract release %s from git history (a shallow clone lacks it: git fetch --unshallow): %v\n%s", commit, err, out)
	}
	tmp := bin + ".tmp-" + filepath.Base(src)
	build := exec.Command("go", "build", "-o", tmp, "./cmd/metad")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build release %s: %v\n%s", commit, err, out)
	}
	// Concurrent builds race harmlessly: each renames a complete binary.
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}
