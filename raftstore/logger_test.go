package raftstore

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func TestHCLogAdapterKeepsLevelsAndFields(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := newHCLogger(base, "raft").With("peer", "n2")

	l.Info("entering leader state", "term", 3)
	l.Debug("append entries", "index", 9)
	l.Trace("too chatty")
	l.Named("transport").Warn("slow", "ms", 5)
	l.Error("failed")
	l.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}).Print("from std")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=INFO msg="entering leader state" peer=n2 logger=raft term=3`,
		`level=DEBUG msg="append entries" peer=n2 logger=raft index=9`,
		`level=WARN msg=slow peer=n2 logger=raft.transport ms=5`,
		`level=ERROR msg=failed peer=n2 logger=raft`,
		`level=WARN msg="from std" peer=n2 logger=raft`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d = %q, want suffix %q", i, lines[i], w)
		}
	}
	if l.IsTrace() || !l.IsDebug() || l.GetLevel() != hclog.Debug {
		t.Errorf("levels: trace %v debug %v level %v", l.IsTrace(), l.IsDebug(), l.GetLevel())
	}
	if got := l.Named("snapshot").Name(); got != "raft.snapshot" {
		t.Errorf("Named = %q", got)
	}
	if got := l.ImpliedArgs(); len(got) != 2 || got[0] != "peer" {
		t.Errorf("ImpliedArgs = %v", got)
	}
}

// TestHCLogAdapterRendersHCLogValues: raft logs its configuration with
// hclog.Fmt; the line must show the servers, not the format string.
func TestHCLogAdapterRendersHCLogValues(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLogger(slog.New(slog.NewJSONHandler(&buf, nil)), "raft").Named("snapshot")
	servers := []raft.Server{{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:7421"}}
	l.Info("initial configuration", "index", 1, "servers", hclog.Fmt("%+v", servers),
		"hex", hclog.Hex(255), "oct", hclog.Octal(8), "bin", hclog.Binary(5), "q", hclog.Quote("a b"), "dangling")

	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON object (duplicate keys?): %v\n%s", err, buf.String())
	}
	want := map[string]any{
		"servers": "[{Suffrage:Voter ID:n1 Address:127.0.0.1:7421}]", "hex": "0xff", "oct": "010",
		"bin": "0b101", "q": "a b", hclog.MissingKey: "dangling", "logger": "raft.snapshot",
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v", k, rec[k], v)
		}
	}
	if strings.Count(buf.String(), `"logger"`) != 1 {
		t.Errorf("logger key repeated: %s", buf.String())
	}
}

// TestHCLogAdapterLimitsRepeatedWarnings: raft's per-peer failure lines
// are logged once per window per peer, with the count held back.
func TestHCLogAdapterLimitsRepeatedWarnings(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	a := newHCLogger(slog.New(slog.NewTextHandler(&buf, nil)), "raft").(*hclogAdapter)
	a.repeats = newRepeatLimiter(10*time.Second, func() time.Time { return now })

	for range 5 {
		a.Error("failed to heartbeat to", "peer", "n2", "error", "refused")
		a.Error("failed to heartbeat to", "peer", "n3", "error", "refused")
		a.Info("entering follower state") // INFO is never limited
		now = now.Add(time.Second)
	}
	now = now.Add(10 * time.Second)
	a.Error("failed to heartbeat to", "peer", "n2", "error", "refused")

	out := buf.String()
	if got := strings.Count(out, "peer=n2"); got != 2 {
		t.Errorf("n2 logged %d times, want 2:\n%s", got, out)
	}
	if got := strings.Count(out, "peer=n3"); got != 1 {
		t.Errorf("n3 logged %d times, want 1:\n%s", got, out)
	}
	if !strings.Contains(out, "peer=n2 error=refused suppressed=4") {
		t.Errorf("missing suppressed count:\n%s", out)
	}
	if got := strings.Count(out, "entering follower state"); got != 5 {
		t.Errorf("INFO logged %d times, want 5", got)
	}
}
