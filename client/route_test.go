package client

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
)

// leaderServer says it leads (at addr), answers DescribeStream(1) once
// release is closed, and refuses DescribeStream(2) as NOT_LEADER.
type leaderServer struct {
	metadpb.UnimplementedMetadServer
	metadpb.UnimplementedClusterServer
	addr    string
	started chan struct{}
	release chan struct{}
}

func (s *leaderServer) Status(context.Context, *metadpb.StatusRequest) (*metadpb.StatusResponse, error) {
	return &metadpb.StatusResponse{LeaderId: "n1", Nodes: []*metadpb.NodeStatus{{NodeId: "n1", State: "Leader", GrpcAddr: s.addr}}}, nil
}

func (s *leaderServer) DescribeStream(ctx context.Context, req *metadpb.DescribeStreamRequest) (*metadpb.DescribeStreamResponse, error) {
	if req.StreamId == 2 {
		st, _ := status.New(codes.Unavailable, "not the leader").WithDetails(&errdetails.ErrorInfo{
			Reason: ReasonNotLeader, Domain: "metad.dev", Metadata: map[string]string{"definite": "true"},
		})
		return nil, st.Err()
	}
	close(s.started)
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &metadpb.DescribeStreamResponse{Stream: &metadpb.Stream{Id: 1}}, nil
}

// TestLeaderMovedKeepsCallsInFlight: when one call learns that the leader
// moved, the calls still running on the leader's connection finish; the
// connection is closed after them, not under them.
func TestLeaderMovedKeepsCallsInFlight(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	ls := &leaderServer{addr: lis.Addr().String(), started: make(chan struct{}), release: make(chan struct{})}
	metadpb.RegisterMetadServer(srv, ls)
	metadpb.RegisterClusterServer(srv, ls)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	c, err := New(Config{Addrs: []string{ls.addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// Discover the leader now, as the first routed call would in the
	// background.
	c.router.mu.Lock()
	c.router.looking = true
	c.router.mu.Unlock()
	c.router.bg.Add(1)
	c.router.discover()
	if _, lc := c.router.pick(); lc == nil {
		t.Fatal("no leader connection after discovery")
	} else {
		c.router.release(lc)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slow := make(chan error, 1)
	go func() {
		_, err := c.Metad.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: 1})
		slow <- err
	}()
	<-ls.started
	if _, err := c.Metad.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: 2}); Reason(FromStatus(err)) != ReasonNotLeader {
		t.Fatalf("the refusing call: %v, want NOT_LEADER", err)
	}
	c.router.mu.Lock()
	forgotten := c.router.leader == nil
	c.router.mu.Unlock()
	if !forgotten {
		t.Fatal("NOT_LEADER did not make the router forget the leader")
	}
	close(ls.release)
	if err := <-slow; err != nil {
		t.Fatalf("a call in flight on the forgotten leader's connection failed: %v", err)
	}
}
