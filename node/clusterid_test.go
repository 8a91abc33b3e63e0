package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/internal/waitfor"
	"github.com/metad/metad/peer"
)

// awaitClusterID waits until the node's state has a cluster id and its
// data dir records it, and returns it.
func awaitClusterID(t *testing.T, n *Server) string {
	t.Helper()
	var id string
	waitfor.Cond(t, 30*time.Second, "cluster id recorded", func() error {
		id = n.stateClusterID()
		if id != "" {
			if rec, err := LoadClusterID(n.cfg.DataDir); err == nil && rec == id {
				return nil
			}
		}
		return fmt.Errorf("state %q, not recorded yet", id)
	})
	return id
}

// TestPeerCallsCarryTheClusterID: a new single-node cluster gets a 128-bit
// id, recorded in its data dir; a Peer call naming another cluster is
// refused with CLUSTER_ID_MISMATCH naming both, one naming this cluster
// or none (a 0.1.0 caller) passes, and LocalStatus answers anyone with
// the id.
func TestPeerCallsCarryTheClusterID(t *testing.T) {
	n := startTestNode(t, nil)
	id := awaitClusterID(t, n)
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("cluster id %q is not 128-bit hex", id)
	}
	conn, err := grpc.NewClient("passthrough:///"+n.cfg.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.PeerSecretCredentials(n.sec.settings.PeerSecret)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	peerSvc := metadpb.NewPeerClient(conn)
	call := func(callerID string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if callerID != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, peer.ClusterIDHeader, callerID)
		}
		_, err := peerSvc.ReadIndex(ctx, &metadpb.ReadIndexRequest{})
		return err
	}
	for _, caller := range []string{"", id} {
		if err := call(caller); err != nil {
			t.Errorf("caller with cluster id %q refused: %v", caller, err)
		}
	}
	err = call("0123456789abcdef0123456789abcdef")
	st, _ := status.FromError(err)
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if st.Code() != codes.FailedPrecondition || info == nil || info.Reason != metadpb.Reason_CLUSTER_ID_MISMATCH.String() ||
		info.Metadata["cluster_id"] != id || !strings.Contains(st.Message(), "0123456789abcdef0123456789abcdef") {
		t.Fatalf("foreign caller: %v (%+v)", err, info)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), peer.ClusterIDHeader, "0123456789abcdef0123456789abcdef")
	ls, err := peerSvc.LocalStatus(ctx, &metadpb.LocalStatusRequest{})
	if err != nil || ls.ClusterId != id {
		t.Fatalf("LocalStatus: %v, cluster id %q", err, ls.GetClusterId())
	}
}

// TestDataDirOfAnotherClusterIsAHardStop: a data dir whose recorded id
// differs from the state it holds stops the node, naming both ids.
func TestDataDirOfAnotherClusterIsAHardStop(t *testing.T) {
	dir := t.TempDir()
	n := startTestNode(t, func(c *Config) { c.DataDir = dir })
	id := awaitClusterID(t, n)
	cfg := n.cfg
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	const other = "ffffffffffffffffffffffffffffffff"
	if err := StoreClusterID(dir, other); err != nil {
		t.Fatal(err)
	}
	// The state's id is known at start if the snapshot holds it, else once
	// the log is replayed: the refusal is Start's error or the running
	// node's fatal error.
	again, err := Start(cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err == nil {
		select {
		case err = <-again.Err():
		case <-time.After(30 * time.Second):
		}
		_ = again.Shutdown()
	}
	if !errors.Is(err, ErrClusterIDMismatch) || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), other) {
		t.Fatalf("start: %v; want ErrClusterIDMismatch naming %s and %s", err, id, other)
	}
}

func TestLoadClusterIDRefusesADamagedFile(t *testing.T) {
	dir := t.TempDir()
	if id, err := LoadClusterID(dir); id != "" || err != nil {
		t.Fatalf("no file: %q, %v", id, err)
	}
	if err := os.WriteFile(filepath.Join(dir, clusterIDFile), []byte("two words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadClusterID(dir); err == nil {
		t.Fatal("a damaged cluster id file loaded")
	}
}
