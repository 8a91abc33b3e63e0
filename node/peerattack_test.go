package node

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/internal/ports"
	"github.com/metad/metad/internal/waitfor"
)

// freeAddr returns a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := ports.Free(20000, 32000)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startTestNode starts a single-node server with cfg's security settings
// on free loopback ports and waits until it serves.
func startTestNode(t *testing.T, edit func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.GRPCAddr, cfg.HTTPAddr = freeAddr(t), ""
	cfg.Raft.BindAddr, cfg.Membership.BindAddr = freeAddr(t), freeAddr(t)
	cfg.Membership.BootstrapExpect = 1
	cfg.NodeID = "n1"
	if edit != nil {
		edit(&cfg)
	}
	cfg.Complete()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n, err := Start(cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	waitfor.Cond(t, 20*time.Second, "node SERVING", servingErr(n))
	return n
}

// TestPeerProposeAttackRefusedInsecureMode is issue 10's attack, in the
// default insecure loopback mode: a plain gRPC client on the client port
// calls metad.v1.Peer/Propose with a raw Trim, then MarkObjectDeleting
// and MarkObjectDeleted on a registered object. Every call must be refused
// and the state unchanged.
func TestPeerProposeAttackRefusedInsecureMode(t *testing.T) {
	n := startTestNode(t, nil)
	conn, err := grpc.NewClient("passthrough:///"+n.cfg.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	runPeerAttack(t, n, conn, codes.Unauthenticated)
}

// runPeerAttack sets up a stream with data and a registered object through
// the public service, then attacks through Peer/Propose over conn and
// checks each attack call fails with want and changes nothing.
func runPeerAttack(t *testing.T, n *Server, conn *grpc.ClientConn, want codes.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := metadpb.NewMetadClient(adminConn(t, n))
	cs, err := admin.CreateStream(ctx, &metadpb.CreateStreamRequest{Name: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	obj := &metadpb.ObjectRef{Key: "objects/victim-1", Identity: "etag-1"}
	if _, err := admin.RegisterObject(ctx, &metadpb.RegisterObjectRequest{Object: obj, Size: 10}); err != nil {
		t.Fatal(err)
	}
	before := n.store.Status().AppliedIndex
	peer := metadpb.NewPeerClient(conn)
	attacks := []*fsmpb.Command{
		{RequestId: "attack-trim", Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: cs.StreamId, Offset: 0}}},
		{RequestId: "attack-deleting", Op: &fsmpb.Command_MarkObjectDeleting{MarkObjectDeleting: &fsmpb.MarkObjectDeleting{Object: &fsmpb.ObjectRef{Key: obj.Key, Identity: obj.Identity}}}},
		{RequestId: "attack-deleted", Op: &fsmpb.Command_MarkObjectDeleted{MarkObjectDeleted: &fsmpb.MarkObjectDeleted{Object: &fsmpb.ObjectRef{Key: obj.Key, Identity: obj.Identity}}}},
	}
	for _, cmd := range attacks {
		data, err := proto.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		_, err = peer.Propose(ctx, &metadpb.ProposeRequest{Command: data})
		if status.Code(err) != want {
			t.Errorf("Peer/Propose %s: got %v, want %v", cmd.RequestId, err, want)
		}
	}
	for _, call := range []func() error{
		func() error { _, err := peer.ReadIndex(ctx, &metadpb.ReadIndexRequest{}); return err },
		func() error { _, err := peer.LocalStatus(ctx, &metadpb.LocalStatusRequest{}); return err },
		func() error { _, err := peer.Repair(ctx, &metadpb.RepairRequest{StreamId: cs.StreamId}); return err },
		func() error {
			_, err := peer.ConfirmLeadership(ctx, &metadpb.ConfirmLeadershipRequest{Term: 1, LeaderId: "x"})
			return err
		},
	} {
		if err := call(); status.Code(err) != want {
			t.Errorf("Peer call: got %v, want %v", err, want)
		}
	}
	if after := n.store.Status().AppliedIndex; after != before {
		t.Errorf("applied index moved from %d to %d: an attack call reached the log", before, after)
	}
	d, err := admin.DescribeObject(ctx, &metadpb.DescribeObjectRequest{Key: obj.Key})
	if err != nil {
		t.Fatalf("the registered object is gone: %v", err)
	}
	if s := d.Object.GetStatus(); s != metadpb.ObjectStatus_LIVE {
		t.Errorf("object status %s after the attack, want LIVE", s)
	}
}

// testAdmin dials a node with TLS as an operator (set by its test).
var testAdmin = map[*Server]func(t *testing.T) *grpc.ClientConn{}

// adminConn dials n as an operator: plainly in insecure mode.
func adminConn(t *testing.T, n *Server) *grpc.ClientConn {
	t.Helper()
	if dial, ok := testAdmin[n]; ok {
		return dial(t)
	}
	conn, err := grpc.NewClient("passthrough:///"+n.cfg.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// servingErr is the condition that n's health verdict is SERVING.
func servingErr(n *Server) func() error {
	return func() error {
		if !n.api.Serving() {
			return errors.New("not SERVING yet")
		}
		return nil
	}
}
