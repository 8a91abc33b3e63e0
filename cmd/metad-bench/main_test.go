package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/metad/metad/objectstore"
)

// Bad flags and settings exit 2 before anything is dialled, naming the
// flag at fault.
func TestBadUsageExitsTwoNamingTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--bogus"}, "--bogus"},
		{[]string{"extra"}, "arguments"},
		{[]string{"--workload", "nope"}, "--workload"},
		{[]string{"--workload", "read"}, "--object-store"},
		{[]string{"--workload", "get", "--object-dir", t.TempDir(), "--read-size", "2048"}, "--read-size"},
		{[]string{"--workload", "get", "--object-dir", t.TempDir(), "--client-read"}, "--client-read"},
		{[]string{"--workload", "read", "--object-dir", t.TempDir(), "--client-read", "--read-size", "10"}, "--client-read"},
		{[]string{"-c", "0"}, "--concurrency"},
		{[]string{"--workload", "commit-object", "--streams-per-object", "0"}, "--streams-per-object"},
		{[]string{"--addr", "nowhere"}, "--addr"},
		{[]string{"-o", "yaml"}, "--output"},
		{[]string{"--object-store", "ftp://x"}, "object-store"},
	} {
		cmd := newBenchCmd()
		cmd.SetArgs(c.args)
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.ExecuteContext(context.Background())
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%v: exit %d, error %v; want 2 naming %s", c.args, exitCode(err), err, c.flag)
		}
	}
}

// --timeout is per call here, unlike metad's commands, and says so.
func TestTimeoutIsPerCall(t *testing.T) {
	f := newBenchCmd().Flags().Lookup("timeout")
	if f == nil || !strings.Contains(f.Usage, "each call") {
		t.Fatalf("--timeout: %+v", f)
	}
}

func TestStoreFailuresAreNamedInTheErrorTable(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("get: %w", objectstore.ErrIdentityMismatch): "STORE_IDENTITY_MISMATCH",
		fmt.Errorf("get: %w", objectstore.ErrNotFound):         "STORE_NOT_FOUND",
		fmt.Errorf("get: %w", objectstore.ErrUnavailable):      "STORE_UNAVAILABLE",
		context.DeadlineExceeded:                               "DEADLINE_EXCEEDED",
		errors.New("other"):                                    "CLIENT_ERROR",
	} {
		if got := benchReason(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}
