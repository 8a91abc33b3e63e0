package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"
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
	trans, err := newTCPTransport(cfg, hclog.NewNullLogger(), &identity{}, slog.New(slog.DiscardHandler))
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

// TestReplicationIsNeverPipelined: the transport raftstore gives raft
// refuses pipelines, so raft replicates with one AppendEntries in flight
// per follower. v1.7.3's pipeline can deadlock when a follower's
// connection fails mid-flight and never replicate to that follower again
// (hashicorp/raft#612; the disk-error nemesis hit it). Raft's own
// transport, the control, offers one.
func TestReplicationIsNeverPipelined(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeID, cfg.BindAddr = "leader", "127.0.0.1:0"
	trans, err := newTCPTransport(cfg, hclog.NewNullLogger(), &identity{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer trans.(raft.WithClose).Close()
	if p, err := trans.AppendEntriesPipeline("follower", trans.LocalAddr()); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		if p != nil {
			p.Close()
		}
		t.Errorf("AppendEntriesPipeline: %v, want raft.ErrPipelineReplicationNotSupported", err)
	}

	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	p, err := plain.AppendEntriesPipeline("follower", plain.LocalAddr())
	if err != nil {
		t.Fatalf("control: raft's own transport offers no pipeline: %v", err)
	}
	p.Close()
}

// TestSteppedDownLeaderWritesNothingUnderTheNewTerm replays the race of
// hashicorp/raft#695 on a real TCP transport: a leader idle in its loop gets
// a heartbeat from a leader of a newer term it never heard of, then a
// command. The command must be refused, never written under the newer term
// (a term in which this node never led: in a cluster, the real leader of
// that term writes other commands at the same indexes, and log matching,
// which compares terms, never replaces them). The control, raft's own
// transport with its heartbeat fast path, writes them.
func TestSteppedDownLeaderWritesNothingUnderTheNewTerm(t *testing.T) {
	cfg := testConfig("solo", "")
	trans, err := newTCPTransport(cfg, hclog.NewNullLogger(), &identity{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if bad := stepDownAndPropose(t, trans); len(bad) > 0 {
		t.Errorf("entries written under a term this node never led:\n%v", bad)
	}

	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if bad := stepDownAndPropose(t, plain); len(bad) == 0 {
		t.Error("control: raft's own transport wrote nothing under the new terms; this test no longer reproduces hashicorp/raft#695")
	} else {
		t.Logf("control: raft's own transport wrote %d entries under terms it never led", len(bad))
	}
}

// stepDownAndPropose runs a single-server store on trans for ten rounds of:
// wait to lead, receive a heartbeat of the next term from a ghost leader,
// propose a command. It returns the log entries written under a ghost's
// term.
func stepDownAndPropose(t *testing.T, trans raft.Transport) []LogEntry {
	t.Helper()
	dir := t.TempDir()
	s, err := open(testConfig("solo", dir), nil, testLogger(t), openOptions{transport: trans})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Bootstrap([]Server{{ID: "solo", Address: s.Addr()}}); err != nil {
		t.Fatal(err)
	}
	ghost, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	cmd := createStream("x")
	ghostTerms := map[uint64]bool{}
	for round := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		_, _, err := s.AwaitLeadership(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		term := s.raft.CurrentTerm() + 1
		ghostTerms[term] = true
		req := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("ghost"), Addr: []byte(ghost.LocalAddr())},
			Term:      term,
		}
		if err := ghost.AppendEntries("solo", raft.ServerAddress(s.Addr()), req, &raft.AppendEntriesResponse{}); err != nil {
			t.Fatalf("round %d: heartbeat: %v", round, err)
		}
		cmd.RequestId = fmt.Sprintf("round-%d", round)
		data, _ := proto.Marshal(cmd)
		_ = s.raft.Apply(data, time.Second).Error() // refused, or lost with the leadership
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var bad []LogEntry
	err = ReadLog(dir, 0, 0, func(e LogEntry) error {
		if ghostTerms[e.Term] {
			bad = append(bad, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bad
}
