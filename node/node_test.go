package node

import (
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// TestGoMetricsBridgeReceivesCompat: what raft emits through go-metrics'
// compat package (whichever library it forwards to in this build) reaches
// the Prometheus collector the node registers.
func TestGoMetricsBridgeReceivesCompat(t *testing.T) {
	bridge, err := goMetricsBridge()
	if err != nil {
		t.Fatal(err)
	}
	again, err := goMetricsBridge()
	if err != nil || again != bridge {
		t.Fatal("the bridge must be installed once per process")
	}
	metrics.IncrCounter([]string{"metadtest", "bridge", "hits"}, 3)
	metrics.SetGauge([]string{"metadtest", "bridge", "level"}, 7)
	metrics.MeasureSince([]string{"raft", "commitTime"}, time.Now().Add(-5*time.Millisecond))

	reg := prometheus.NewRegistry()
	reg.MustRegister(bridge)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range families {
		got[f.GetName()] = f.GetHelp()
		for _, m := range f.Metric {
			switch f.GetName() {
			case "metadtest_bridge_hits":
				if v := m.GetCounter().GetValue(); v != 3 {
					t.Errorf("counter %v, want 3", v)
				}
			case "metadtest_bridge_level":
				if v := m.GetGauge().GetValue(); v != 7 {
					t.Errorf("gauge %v, want 7", v)
				}
			case "raft_commitTime":
				if n := m.GetSummary().GetSampleCount(); n < 1 {
					t.Errorf("raft_commitTime has %d samples", n)
				}
			}
		}
	}
	for _, name := range []string{"metadtest_bridge_hits", "metadtest_bridge_level", "raft_commitTime", "raft_state_leader"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s not collected (library %s)", name, goMetricsLibrary)
		}
	}
	if help := got["raft_commitTime"]; !strings.Contains(help, "commit") {
		t.Errorf("raft_commitTime help %q: the declared help text is missing", help)
	}
}

func TestNotifierSendsReadyOnceAndNeverAfterStopping(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := &notifier{socket: sock, log: slog.New(slog.DiscardHandler)}
	n.status("waiting for a leader")
	n.markReady("serving")
	n.markReady("serving again")
	n.markStopping()
	n.markReady("too late")
	n.status("too late")
	n.markStopping()

	var got []string
	buf := make([]byte, 1024)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		k, err := conn.Read(buf)
		if err != nil {
			break
		}
		got = append(got, string(buf[:k]))
	}
	want := []string{"STATUS=waiting for a leader", "READY=1\nSTATUS=serving", "STOPPING=1\nSTATUS=shutting down"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sent %q, want %q", got, want)
	}

	// No socket: nothing is sent and nothing fails.
	(&notifier{log: slog.New(slog.DiscardHandler)}).markReady("x")
	// A socket nobody listens on: logged, not fatal.
	(&notifier{socket: filepath.Join(t.TempDir(), "none"), log: slog.New(slog.DiscardHandler)}).markReady("x")
}
