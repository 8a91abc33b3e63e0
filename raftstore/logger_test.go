package raftstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
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
		`level=INFO msg="entering leader state" logger=raft peer=n2 term=3`,
		`level=DEBUG msg="append entries" logger=raft peer=n2 index=9`,
		`level=WARN msg=slow logger=raft peer=n2 logger=raft.transport ms=5`,
		`level=ERROR msg=failed logger=raft peer=n2`,
		`level=WARN msg="from std" logger=raft peer=n2`,
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
