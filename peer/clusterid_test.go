package peer

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/metad/metad/api/metadpb"
)

// TestClusterIDUnaryRefusesOtherClusters: a Peer call naming another
// cluster is refused with ErrClusterIDMismatch naming both ids and the
// method, without running the handler; a caller naming this cluster or
// none (a 0.1.0 node), a node that knows no id of its own, LocalStatus
// (how a leader learns a newcomer's id) and the other services pass.
func TestClusterIDUnaryRefusesOtherClusters(t *testing.T) {
	own := "aaaa"
	n := &Node{log: slog.New(slog.DiscardHandler), toStatus: func(err error) error { return err },
		ownClusterID: func() string { return own }}
	call := func(method, caller string) (ran bool, err error) {
		ctx := context.Background()
		if caller != "" {
			ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(ClusterIDHeader, caller))
		}
		_, err = n.ClusterIDUnary(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method},
			func(context.Context, any) (any, error) { ran = true; return nil, nil })
		return ran, err
	}
	propose := metadpb.Peer_Propose_FullMethodName
	ran, err := call(propose, "bbbb")
	var mismatch *ClusterIDMismatchError
	if ran || !errors.Is(err, ErrClusterIDMismatch) || !errors.As(err, &mismatch) {
		t.Fatalf("foreign caller: ran %v, err %v; want refused with ErrClusterIDMismatch", ran, err)
	}
	if m := mismatch.Metadata(); m["cluster_id"] != own || m["caller_cluster_id"] != "bbbb" || m["method"] != propose {
		t.Fatalf("refusal metadata %v, want both ids and the method", m)
	}
	passes := []struct{ name, method, caller, own string }{
		{"same cluster", propose, "aaaa", "aaaa"},
		{"caller sends no id", propose, "", "aaaa"},
		{"this node has no id yet", propose, "bbbb", ""},
		{"LocalStatus answers anyone", metadpb.Peer_LocalStatus_FullMethodName, "bbbb", "aaaa"},
		{"public service", metadpb.Metad_ListStreams_FullMethodName, "bbbb", "aaaa"},
	}
	for _, p := range passes {
		own = p.own
		if ran, err := call(p.method, p.caller); !ran || err != nil {
			t.Errorf("%s: ran %v, err %v; want it let through", p.name, ran, err)
		}
	}
}
