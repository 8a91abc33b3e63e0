package raftstore

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// sendHeartbeat sends one heartbeat, as a leader's heartbeat loop does, to
// trans and reports whether it reached raft's main goroutine (the
// transport's consumer channel) or the heartbeat handler.
func sendHeartbeat(t *testing.T, trans raft.Transport) (viaConsumer bool) {
	t.Helper()
	fast := make(chan raft.RPC, 1)
	trans.SetHeartbeatHandler(func(rpc raft.RPC) { fast <- rpc })
	sender, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	errc := make(chan error, 1)
	go func() {
		req := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("leader"), Addr: []byte(sender.LocalAddr())},
			Term:      7,
		}
		errc <- sender.AppendEntries("follower", trans.LocalAddr(), req, &raft.AppendEntriesResponse{})
	}()
	var rpc raft.RPC
	select {
	case rpc = <-trans.Consumer():
		viaConsumer = true
	case rpc = <-fast:
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat reached neither the consumer nor the handler")
	}
	if _, ok := rpc.Command.(*raft.AppendEntriesRequest); !ok {
		t.Fatalf("received %T, want the AppendEntriesRequest", rpc.Command)
	}
	rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
	if err := <-errc; err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	return viaConsumer
}

// TestHeartbeatsRunOnRaftsMainGoroutine: the transport raftstore gives raft
// hands heartbeats to raft's main goroutine, never to the fast-path handler
// that changes raft's term concurrently with it (hashicorp/raft#695; see
// serialHeartbeats). Raft's own TCP transport, as the control, does take the
// fast path for the same heartbeat.
func TestHeartbeatsRunOnRaftsMainGoroutine(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeID, cfg.BindAddr = "follower", "127.0.0.1:0"
	trans, err := newTCPTransport(cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer trans.(raft.WithClose).Close()
	if _, ok := trans.(raft.WithPreVote); !ok {
		t.Error("the transport lost pre-vote support")
	}
	if !sendHeartbeat(t, trans) {
		t.Error("a heartbeat ran on the transport's goroutine, concurrently with raft's main loop")
	}

	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if sendHeartbeat(t, plain) {
		t.Error("control: raft's own transport did not take the heartbeat fast path; this test no longer sends what raft takes for a heartbeat")
	}
}
