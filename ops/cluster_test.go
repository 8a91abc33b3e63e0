package ops

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"
)

// TestClusterCommands drives `metad members` and `metad raft list-peers |
// transfer-leader | remove-peer` against a 3-node cluster, through any
// member, and checks each against the cluster's status.
func TestClusterCommands(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	addr := c.Nodes[0].GRPC

	out := mustCLI(t, "members", "--addr", addr)
	for _, nd := range c.Nodes {
		if !strings.Contains(out, nd.ID) || !strings.Contains(out, nd.Gossip) {
			t.Errorf("members lacks %s at %s:\n%s", nd.ID, nd.Gossip, out)
		}
	}
	if strings.Count(out, "alive") != 3 {
		t.Errorf("members: want 3 alive:\n%s", out)
	}
	out = mustCLI(t, "raft", "list-peers", "--addr", addr)
	for _, nd := range c.Nodes {
		if !strings.Contains(out, nd.ID) || !strings.Contains(out, nd.Raft) {
			t.Errorf("list-peers lacks %s at %s:\n%s", nd.ID, nd.Raft, out)
		}
	}

	// transfer-leader --to a follower, asked through another follower.
	leader := c.WaitLeader(0)
	to, via := (leader+1)%3, (leader+2)%3
	out = mustCLI(t, "raft", "transfer-leader", "--to", c.Nodes[to].ID, "--addr", c.Nodes[via].GRPC)
	if !strings.Contains(out, "leader is now "+c.Nodes[to].ID) {
		t.Fatalf("transfer-leader --to %s: %s", c.Nodes[to].ID, out)
	}
	c.WaitFor("the new leader seen by all", 10*time.Second, func() bool {
		return c.Leader(0) == to && c.Leader(1) == to && c.Leader(2) == to
	})
	// transfer-leader without --to: raft picks, and someone else leads.
	out = mustCLI(t, "raft", "transfer-leader", "--addr", addr, "-o", "json")
	var resp struct {
		LeaderID string `json:"leader_id"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.LeaderID == "" || resp.LeaderID == c.Nodes[to].ID {
		t.Fatalf("transfer-leader: %v %s", err, out)
	}
	if _, code := cli(t, "", "raft", "transfer-leader", "--to", "nobody", "--addr", addr); code != 3 {
		t.Errorf("transfer-leader to an unknown id: exit %d, want 3", code)
	}

	// remove-peer: a server gone for good leaves the configuration.
	c.WaitFor("a leader", 10*time.Second, func() bool { return c.Leader(0) >= 0 })
	victim := (c.Leader(0) + 1) % 3
	c.Kill(victim)
	other := (victim + 1) % 3
	out = mustCLI(t, "raft", "remove-peer", c.Nodes[victim].ID, "--addr", c.Nodes[other].GRPC)
	if !strings.Contains(out, "removed "+c.Nodes[victim].ID) {
		t.Fatalf("remove-peer: %s", out)
	}
	st, err := c.Status(other)
	if err != nil || len(st.Nodes) != 2 || st.Voters != 2 {
		t.Fatalf("status after remove-peer: %v %v", st, err)
	}
	if out, code := cli(t, "", "raft", "remove-peer", c.Nodes[victim].ID, "--addr", c.Nodes[other].GRPC); code != 3 {
		t.Errorf("removing it again: exit %d, want 3\n%s", code, out)
	}
}

// TestOperatorMistakesAreRefusedByName: transferring leadership to the
// leader itself and removing the last voter are definite refusals that name
// the problem (FailedPrecondition, ALREADY_LEADER / LAST_VOTER, the field
// at fault), not INTERNAL errors of unknown outcome.
func TestOperatorMistakesAreRefusedByName(t *testing.T) {
	c := proc.New(t, 1)
	c.StartAll()
	formed(t, c, 1)
	cl := c.Client()
	self := c.Nodes[0].ID
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cl.Cluster.TransferLeadership(ctx, &metadpb.TransferLeadershipRequest{ToNodeId: self})
	wantRefusal(t, "transfer-leader --to the leader", err, "ALREADY_LEADER", "to_node_id")
	_, err = cl.Cluster.RemovePeer(ctx, &metadpb.RemovePeerRequest{NodeId: self})
	wantRefusal(t, "remove-peer the last voter", err, "LAST_VOTER", "node_id")
	if st, err := c.Status(0); err != nil || st.Voters != 1 || st.LeaderId != self {
		t.Errorf("status after the refusals: %v %v", st, err)
	}
}

func wantRefusal(t *testing.T, what string, err error, reason, field string) {
	t.Helper()
	st, _ := status.FromError(err)
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if st.Code() != codes.FailedPrecondition || info == nil || info.Reason != reason ||
		info.Metadata["definite"] != "true" || info.Metadata["field"] != field {
		t.Errorf("%s: %v (details %v), want a definite FailedPrecondition %s naming %s", what, err, info, reason, field)
	}
}

// TestSystemdNotify: with $NOTIFY_SOCKET set, a server sends READY=1 once
// it serves (/readyz says 200 by then) and STOPPING=1 when SIGTERM starts
// its graceful shutdown.
func TestSystemdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	c := proc.New(t, 1)
	c.StartAll()

	got := receiveUntil(t, conn, "READY=1")
	if !strings.Contains(got, "STATUS=serving") {
		t.Errorf("ready message %q", got)
	}
	if code := httpStatus(t, "http://"+c.Nodes[0].HTTP+"/readyz"); code != http.StatusOK {
		t.Errorf("READY=1 sent, but /readyz says %d", code)
	}
	c.Stop(0)
	receiveUntil(t, conn, "STOPPING=1")
}

// receiveUntil reads notify messages until one contains want.
func receiveUntil(t *testing.T, conn *net.UnixConn, want string) string {
	t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_ = conn.SetReadDeadline(deadline)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if msg := string(buf[:n]); strings.Contains(msg, want) {
			return msg
		}
	}
}
