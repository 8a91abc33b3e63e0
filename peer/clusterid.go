package peer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// Cluster identity on the node-to-node service (README "Cluster
// identity"). A caller of metad.v1.Peer sends its cluster id
// (raftstore.Store.ClusterID) in the metadata ClusterIDHeader; the server
// refuses the call with ErrClusterIDMismatch (api's table: FailedPrecondition,
// reason CLUSTER_ID_MISMATCH) when both know an id and they differ. A
// caller that sends none (release 0.1.0, or a node whose cluster has no
// id yet) is let through: identity then rests on the peer credential.
// LocalStatus is exempt: it only describes this node, and it is how a
// leader learns a newcomer's cluster id to refuse it (membership's
// reconcile probe).

// ClusterIDHeader is the gRPC metadata key of the caller's cluster id.
const ClusterIDHeader = "metad-cluster-id"

// ErrClusterIDMismatch: a Peer call came from another cluster's node.
// *ClusterIDMismatchError carries both ids and the method.
var ErrClusterIDMismatch = errors.New("peer: the caller belongs to another cluster")

// ClusterIDMismatchError is a refused call from another cluster's node;
// errors.Is(err, ErrClusterIDMismatch) holds for it.
type ClusterIDMismatchError struct {
	Method    string
	ClusterID string // this node's
	CallerID  string // the caller's
}

func (e *ClusterIDMismatchError) Error() string {
	return fmt.Sprintf("%s refused: this node belongs to cluster %s, the caller to cluster %s", e.Method, e.ClusterID, e.CallerID)
}

// Is makes errors.Is(err, ErrClusterIDMismatch) true.
func (e *ClusterIDMismatchError) Is(target error) bool { return target == ErrClusterIDMismatch }

// Metadata is what the refusal's ErrorInfo says besides its reason.
func (e *ClusterIDMismatchError) Metadata() map[string]string {
	return map[string]string{"method": e.Method, "cluster_id": e.ClusterID, "caller_cluster_id": e.CallerID}
}

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
func (n *Node) EnsureClusterID(ctx context.Context) (string, error) {
	var level uint32
	var id string
	if err := n.store.ReadLocal(func(m *fsm.Machine) error {
		level, id = m.Level(), m.ClusterID()
		return nil
	}); err != nil || id != "" || level < 2 {
		return id, err
	}
	want := n.store.ClusterID() // the data dir's id: the state has none
	if want == "" {
		want = NewClusterID()
	}
	res, err := n.store.Propose(ctx, &fsmpb.Command{RequestId: "set-cluster-id-" + want,
		Op: &fsmpb.Command_SetClusterId{SetClusterId: &fsmpb.SetClusterID{ClusterId: want}}})
	if err != nil {
		return "", err
	}
	if res.Rejection != nil {
		return "", rejected(res.Rejection)
	}
	n.log.Info("cluster id set: every node records it and refuses nodes of other clusters", "cluster_id", want, "version", res.Version)
	return want, nil
}

// StateClusterID is the cluster id of this node's applied state.
func (n *Node) StateClusterID() string {
	var id string
	_ = n.store.ReadLocal(func(m *fsm.Machine) error {
		id = m.ClusterID()
		return nil
	})
	return id
}

// ClusterIDUnary is the unary server interceptor that refuses a Peer call
// from another cluster's node; other services pass.
func (n *Node) ClusterIDUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := n.checkCallerCluster(ctx, info.FullMethod); err != nil {
		return nil, n.toStatus(err)
	}
	return h(ctx, req)
}

func (n *Node) checkCallerCluster(ctx context.Context, method string) error {
	if !strings.HasPrefix(method, "/"+metadpb.Peer_ServiceDesc.ServiceName+"/") || method == metadpb.Peer_LocalStatus_FullMethodName {
		return nil
	}
	var theirs string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(ClusterIDHeader); len(v) > 0 {
			theirs = v[0]
		}
	}
	own := n.ownClusterID()
	if theirs == "" || own == "" || theirs == own {
		return nil
	}
	n.foreign.note(n, own, theirs, method)
	return &ClusterIDMismatchError{Method: method, ClusterID: own, CallerID: theirs}
}

// foreignCallers logs each caller's cluster id once.
type foreignCallers struct {
	mu   sync.Mutex
	seen map[string]bool // guarded by mu
}

func (f *foreignCallers) note(n *Node, own, theirs, method string) {
	f.mu.Lock()
	first := !f.seen[theirs]
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	f.seen[theirs] = true
	f.mu.Unlock()
	if first {
		n.log.Warn("refusing node-to-node calls from another cluster's node (logged once per cluster id)",
			"cluster_id", own, "caller_cluster_id", theirs, "method", method)
	}
}
