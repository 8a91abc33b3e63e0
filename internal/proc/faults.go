package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	faultsOnce sync.Once
	faultsPath string
	faultsErr  error
)

// FaultsBinary builds cmd/metad with the fault hooks (-tags metad_faults)
// once per test binary and returns its path. Set it as a Node's Bin and
// name the planted bugs in the Node's Env (METAD_FAULTS=...; faults/doc.go).
func FaultsBinary(t testing.TB) string {
	t.Helper()
	faultsOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			faultsErr = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "metad-faults-bin-")
		if err != nil {
			faultsErr = err
			return
		}
		faultsPath = filepath.Join(dir, "metad")
		cmd := exec.Command("go", "build", "-tags", "metad_faults", "-o", faultsPath, "./cmd/metad")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			faultsErr = fmt.Errorf("go build -tags metad_faults: %v\n%s", err, b)
		}
	})
	if faultsErr != nil {
		t.Fatal(faultsErr)
	}
	return faultsPath
}
