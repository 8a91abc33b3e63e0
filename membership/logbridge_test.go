package membership

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
)

func TestLogBridgeLevels(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	std := newStdLogger(logger)
	std.Printf("[DEBUG] memberlist: probing %s", "n2")
	std.Printf("[INFO] memberlist: Marking n2 as failed")
	std.Printf("[WARN] memberlist: Refuting a suspect message")
	std.Printf("[ERR] memberlist: Conflicting address")
	std.Printf("no tag at all")
	want := []struct{ level, msg string }{
		{"DEBUG", "memberlist: probing n2"},
		{"INFO", "memberlist: Marking n2 as failed"},
		{"WARN", "memberlist: Refuting a suspect message"},
		{"ERROR", "memberlist: Conflicting address"},
		{"INFO", "no tag at all"},
	}
	dec := json.NewDecoder(&buf)
	for i, w := range want {
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if rec["level"] != w.level || rec["msg"] != w.msg || rec["component"] != "memberlist" {
			t.Errorf("record %d = %v, want level %s msg %q", i, rec, w.level, w.msg)
		}
	}
}
