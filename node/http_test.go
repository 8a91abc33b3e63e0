package node

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/api"
	"github.com/metad/metad/internal/waitfor"
	"github.com/metad/metad/raftstore"
)

// TestHealthServedWhileRaftStateOpens holds Start inside the raft open (the
// snapshot restore of a large state, minutes) and checks the admin
// endpoints meanwhile: /healthz 200, /readyz and / 503 saying the raft
// state is being restored, /metrics 200. Released, the node becomes ready
// and /readyz is the API's verdict.
func TestHealthServedWhileRaftStateOpens(t *testing.T) {
	inOpen, release := make(chan struct{}), make(chan struct{})
	real := openRaft
	t.Cleanup(func() { openRaft = real })
	openRaft = func(cfg raftstore.Config, p raftstore.Peers, log *slog.Logger, o raftstore.ApplyObserver) (*raftstore.Store, error) {
		close(inOpen)
		<-release
		return real(cfg, p, log, o)
	}
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.GRPCAddr, cfg.HTTPAddr = freeAddr(t), freeAddr(t)
	cfg.Raft.BindAddr, cfg.Membership.BindAddr = freeAddr(t), freeAddr(t)
	cfg.Membership.BootstrapExpect = 1
	cfg.NodeID = "n1"
	cfg.Complete()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	type started struct {
		n   *Server
		err error
	}
	done := make(chan started, 1)
	go func() {
		n, err := Start(cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
		done <- started{n, err}
	}()
	select {
	case <-inOpen:
	case s := <-done:
		t.Fatalf("Start returned without opening raft: %v", s.err)
	}
	_, opening := api.OpeningVerdict()
	get := func(path string) (int, string) {
		t.Helper()
		// A timeout: before this change the listener was bound but not
		// served until the open returned, and a GET hung.
		cl := http.Client{Timeout: 5 * time.Second}
		resp, err := cl.Get("http://" + cfg.HTTPAddr + path)
		if err != nil {
			t.Fatalf("GET %s while raft opens: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, want := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", http.StatusOK, "ok"},
		{"/readyz", http.StatusServiceUnavailable, opening},
		{"/", http.StatusServiceUnavailable, opening},
		{"/metrics", http.StatusOK, "# TYPE"},
	} {
		if code, body := get(want.path); code != want.code || !strings.Contains(body, want.body) {
			t.Errorf("GET %s while raft opens = %d %q, want %d containing %q", want.path, code, body, want.code, want.body)
		}
	}

	close(release)
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	t.Cleanup(func() { _ = s.n.Shutdown() })
	waitfor.Cond(t, 20*time.Second, "/readyz 200 after the open", func() error {
		code, body := get("/readyz")
		if code == http.StatusOK {
			return nil
		}
		if strings.Contains(body, opening) {
			t.Fatalf("/readyz still says %q after Start returned", body)
		}
		return fmt.Errorf("%d %q", code, body)
	})
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "n1") {
		t.Errorf("status page after the open = %d %q", code, body)
	}
}
