package node

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/waitfor"
)

// lockedBuffer is a log sink tests read while the server writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, "msg="+msg+" ") {
			out = append(out, line)
		}
	}
	return out
}

// TestOperatorActionsLeaveAnAuditLine: every operator action — answered
// or refused — leaves one "audit" line naming the method, the caller and
// how it proved itself, the request and the outcome; a reader's call
// leaves none.
func TestOperatorActionsLeaveAnAuditLine(t *testing.T) {
	logs := &lockedBuffer{}
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.GRPCAddr, cfg.HTTPAddr = freeAddr(t), ""
	cfg.Raft.BindAddr, cfg.Membership.BindAddr = freeAddr(t), freeAddr(t)
	cfg.Membership.BootstrapExpect, cfg.NodeID = 1, "n1"
	cfg.Complete()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n, err := Start(cfg, slog.New(slog.NewTextHandler(logs, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	waitfor.Cond(t, 20*time.Second, "node SERVING", servingErr(n)) // the node's own health verdict
	conn, err := grpc.NewClient("passthrough:///"+cfg.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, m := metadpb.NewClusterClient(conn), metadpb.NewMetadClient(conn)
	if _, err := cl.Status(ctx, &metadpb.StatusRequest{}); err != nil {
		t.Fatal(err)
	}
	// A single voter has no one to hand leadership to: refused.
	_, transferErr := cl.TransferLeadership(ctx, &metadpb.TransferLeadershipRequest{ToNodeId: "n9"})
	_, liftErr := m.LiftQuarantine(ctx, &metadpb.LiftQuarantineRequest{RequestId: "lift-1"})
	if transferErr == nil || liftErr == nil {
		t.Fatalf("transfer to a stranger: %v; lift of nothing: %v (want both refused)", transferErr, liftErr)
	}
	lines := logs.lines("audit")
	t.Logf("audit trail:\n%s", strings.Join(lines, "\n"))
	if len(lines) != 2 {
		t.Fatalf("audit lines = %d, want 2 (no line for Status):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i, want := range [][]string{
		{"method=/metad.v1.Cluster/TransferLeadership", "via=open", "role=operator", `request="{\"to_node_id\":\"n9\"}"`, "remote=127.0.0.1:", "outcome="},
		{"method=/metad.v1.Metad/LiftQuarantine", "via=open", `\"request_id\":\"lift-1\"`, "outcome=INVALID_ARGUMENT"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("audit line %d lacks %s:\n%s", i, w, lines[i])
			}
		}
	}
}
