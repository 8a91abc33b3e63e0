package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// Cluster identity on the node-to-node service (README "Cluster identity"). A caller
// of metad.v1.Peer sends its cluster id (raftstore.Store.ClusterID) in the
// metadata ClusterIDHeader; the server refuses the call with
// FailedPrecondition, reason CLUSTER_ID_MISMATCH, when both know an id and
// they differ. A caller that sends none (release 0.1.0, or a node whose
// cluster has no id yet) is let through: identity then rests on the peer
// credential. LocalStatus is exempt: it only describes this node, and it
// is how a leader learns a newcomer's cluster id to refuse it
// (membership's reconcile probe).

// ClusterIDHeader is the gRPC metadata key of the caller's cluster id.
const ClusterIDHeader = "metad-cluster-id"

// NewClusterID makes a random 128-bit cluster id, as hex.
func NewClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// EnsureClusterID gives the cluster its id once the state is at feature
// level 2 and has none (a new cluster, or one upgraded from 0.1.0): the
// id this node's data dir recorded if any, else a new random one. Only
// the leader's proposal can succeed; it returns the state's id after, ""
// while the level is below 2.
func (s *Server) EnsureClusterID(ctx context.Context) (string, error) {
	var level uint32
	var id string
	if err := s.store.ReadLocal(func(m *fsm.Machine) error {
		level, id = m.Level(), m.ClusterID()
		return nil
	}); err != nil || id != "" || level < 2 {
		return id, err
	}
	want := s.store.ClusterID() // the data dir's id: the state has none
	if want == "" {
		want = NewClusterID()
	}
	res, err := s.store.Propose(ctx, &fsmpb.Command{RequestId: "set-cluster-id-" + want,
		Op: &fsmpb.Command_SetClusterId{SetClusterId: &fsmpb.SetClusterID{ClusterId: want}}})
	if err != nil {
		return "", err
	}
	if res.Rejection != nil {
		return "", rejectionError(res.Rejection)
	}
	s.log.Info("cluster id set: every node records it and refuses nodes of other clusters", "cluster_id", want, "version", res.Version)
	return want, nil
}

// clusterIDUnary refuses a Peer call from another cluster's node.
func (s *Server) clusterIDUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.checkCallerCluster(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) checkCallerCluster(ctx context.Context, method string) error {
	if !strings.HasPrefix(method, "/metad.v1.Peer/") || method == metadpb.Peer_LocalStatus_FullMethodName {
		return nil
	}
	var theirs string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(ClusterIDHeader); len(v) > 0 {
			theirs = v[0]
		}
	}
	own := s.store.ClusterID()
	if theirs == "" || own == "" || theirs == own {
		return nil
	}
	s.foreign.note(s, own, theirs, method)
	r := metadpb.Reason_CLUSTER_ID_MISMATCH
	return build(r, reasons.Of(r).Spec,
		sprintf("%s refused: this node belongs to cluster %s, the caller to cluster %s", method, own, theirs), "", nil,
		map[string]string{"method": method, "cluster_id": own, "caller_cluster_id": theirs})
}

// foreignCallers logs each pair of cluster ids once.
type foreignCallers struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (f *foreignCallers) note(s *Server, own, theirs, method string) {
	f.mu.Lock()
	first := !f.seen[theirs]
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	f.seen[theirs] = true
	f.mu.Unlock()
	if first {
		s.log.Warn("refusing node-to-node calls from another cluster's node (logged once per cluster id)",
			"cluster_id", own, "caller_cluster_id", theirs, "method", method)
	}
}

// tagClusterID sends this node's cluster id with every call it makes to
// another node.
func (p *PeerClient) tagClusterID(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if f := p.clusterID.Load(); f != nil {
		if id := (*f)(); id != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, ClusterIDHeader, id)
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// SetClusterID sets where this node's cluster id comes from (the raft
// store, once open); calls carry it from then on.
func (p *PeerClient) SetClusterID(id func() string) { p.clusterID.Store(&id) }
