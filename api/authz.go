package api

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/auth"
)

// rule is what one RPC needs: a role, and whether a node (role peer) may
// also make the call because nodes forward it to the leader after the
// first node checked the caller's own role.
type rule struct {
	need    auth.Role
	peerToo bool
}

// roleTable maps every RPC of every service this server registers to the
// role it needs (README "Roles"). TestRoleTableCoversEveryRPC fails if an
// RPC is missing. Reader ⊂ writer ⊂ operator; peer is apart.
var roleTable = map[string]rule{
	// The read path: resolve hands out pins that the reader releases, and
	// reports candidates it could not read.
	"/metad.v1.Metad/Resolve":                {need: auth.Reader},
	"/metad.v1.Metad/ReleasePin":             {need: auth.Reader},
	"/metad.v1.Metad/ReportCandidateFailure": {need: auth.Reader},
	"/metad.v1.Metad/DescribeStream":         {need: auth.Reader},
	"/metad.v1.Metad/ListStreams":            {need: auth.Reader},
	"/metad.v1.Metad/ListIndex":              {need: auth.Reader},
	"/metad.v1.Metad/ListEvidence":           {need: auth.Reader},
	"/metad.v1.Metad/DescribeObject":         {need: auth.Reader},
	"/metad.v1.Metad/ListQuarantined":        {need: auth.Reader},
	"/metad.v1.Metad/Watch":                  {need: auth.Reader}, // follows a stream (G14)
	"/metad.v1.Cluster/Status":               {need: auth.Reader},
	// A removed node asks a peer for the tombstones (node/removed.go).
	"/metad.v1.Cluster/Members": {need: auth.Reader, peerToo: true},
	// Broker mutations.
	"/metad.v1.Metad/CreateStream":      {need: auth.Writer},
	"/metad.v1.Metad/OpenForWrite":      {need: auth.Writer},
	"/metad.v1.Metad/CommitAppend":      {need: auth.Writer},
	"/metad.v1.Metad/CommitObject":      {need: auth.Writer},
	"/metad.v1.Metad/PublishGeneration": {need: auth.Writer},
	"/metad.v1.Metad/RetireGeneration":  {need: auth.Writer},
	"/metad.v1.Metad/Trim":              {need: auth.Writer},
	"/metad.v1.Metad/Seal":              {need: auth.Writer},
	"/metad.v1.Metad/DeleteStream":      {need: auth.Writer},
	"/metad.v1.Metad/RegisterObject":    {need: auth.Writer},
	"/metad.v1.Metad/Pin":               {need: auth.Writer},
	// The operator's way to re-admit a quarantined record now.
	"/metad.v1.Metad/LiftQuarantine": {need: auth.Operator},
	// Cluster operations. A follower forwards the first two to the leader
	// under its own (peer) identity.
	"/metad.v1.Cluster/TransferLeadership": {need: auth.Operator, peerToo: true},
	"/metad.v1.Cluster/RemovePeer":         {need: auth.Operator, peerToo: true},
	"/metad.v1.Cluster/Untombstone":        {need: auth.Operator, peerToo: true},
	"/metad.v1.Cluster/Snapshot":           {need: auth.Operator},
	// The node-to-node service: peers only.
	"/metad.v1.Peer/Propose":           {need: auth.Peer},
	"/metad.v1.Peer/ReadIndex":         {need: auth.Peer},
	"/metad.v1.Peer/ConfirmLeadership": {need: auth.Peer},
	"/metad.v1.Peer/LocalStatus":       {need: auth.Peer},
	"/metad.v1.Peer/Repair":            {need: auth.Peer},
}

// openServices answer anyone: probes must reach health without
// credentials, and reflection describes only the public schema.
var openServices = []string{"/grpc.health.v1.Health/", "/grpc.reflection.v1.ServerReflection/", "/grpc.reflection.v1alpha.ServerReflection/"}

// authorize returns nil if the caller in ctx may call method. A method
// missing from the table is refused to everyone: a new RPC is closed
// until someone decides its role.
func authorize(ctx context.Context, s auth.Settings, method string) error {
	for _, p := range openServices {
		if strings.HasPrefix(method, p) {
			return nil
		}
	}
	r, ok := roleTable[method]
	if !ok {
		return denied(metadpb.Reason_PERMISSION_DENIED, method, "unlisted", "no role may call %s", method)
	}
	if r.need == auth.Peer && !s.TLS && s.LegacyPeers != nil && s.LegacyPeers() && !auth.PresentsCredential(ctx) {
		return nil // a server of the previous release may be calling (feature level 1)
	}
	id, err := s.Identify(ctx)
	if errors.Is(err, auth.ErrPeerSecretMismatch) {
		return build(metadpb.Reason_UNAUTHENTICATED, reasons.Of(metadpb.Reason_UNAUTHENTICATED).Spec, sprintf("%s: %v", method, err), "", nil,
			map[string]string{"method": method, "required_role": r.need.String(), "credential": credentialPeerSecret})
	}
	if err != nil {
		return denied(metadpb.Reason_UNAUTHENTICATED, method, r.need.String(), "%s: %v", method, err)
	}
	if id.Role == auth.None && id.Via == "" {
		return denied(metadpb.Reason_UNAUTHENTICATED, method, r.need.String(),
			"%s needs role %s: present a client certificate or a bearer token", method, r.need)
	}
	if id.Role.Satisfies(r.need) || (r.peerToo && id.Role == auth.Peer) {
		return nil
	}
	if id.Via == "open" {
		// Open mode grants everything but the node-to-node service.
		return denied(metadpb.Reason_UNAUTHENTICATED, method, r.need.String(),
			"%s is the node-to-node service: only cluster members may call it (with TLS: a peer certificate; without: the cluster's peer secret)", method)
	}
	return denied(metadpb.Reason_PERMISSION_DENIED, method, r.need.String(),
		"%s needs role %s; %s %q has role %s", method, r.need, id.Via, id.Name, id.Role)
}

// denied is a refusal with an ErrorInfo naming the method and the role it
// needs; like every refusal before anything ran, it is definite.
func denied(r metadpb.Reason, method, role, format string, args ...any) error {
	return build(r, reasons.Of(r).Spec, sprintf(format, args...), "", nil,
		map[string]string{"method": method, "required_role": role})
}

// credentialPeerSecret is the ErrorInfo "credential" of a refusal of a
// wrong peer secret (IsPeerSecretRefusal).
const credentialPeerSecret = "peer-secret"

// IsPeerSecretRefusal reports whether err is another node refusing this
// node's peer secret: the two nodes' --peer-secret-file differ.
func IsPeerSecretRefusal(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unauthenticated {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Metadata["credential"] == credentialPeerSecret {
			return true
		}
	}
	return false
}

// authUnary and authStream refuse calls whose caller lacks the role.
func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := authorize(ctx, s.auth, info.FullMethod); err != nil {
		s.noteRefusal(ctx, info.FullMethod, err)
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := authorize(ss.Context(), s.auth, info.FullMethod); err != nil {
		s.noteRefusal(ss.Context(), info.FullMethod, err)
		return err
	}
	return h(srv, ss)
}

// noteRefusal logs a refused peer secret at WARN, naming the caller's
// address and the node it says it is, at most once per
// auth.RefusalLogEvery: a node of another --peer-secret-file is otherwise
// refused in silence here, while the node it calls only sees the refusal.
func (s *Server) noteRefusal(ctx context.Context, method string, err error) {
	if !IsPeerSecretRefusal(err) {
		return
	}
	ok, suppressed := s.refusals.Allow(s.clock.Now())
	if !ok {
		return
	}
	remote, node := "", ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		remote = p.Addr.String()
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(auth.CallerNodeKey); len(v) > 0 {
			node = v[0]
		}
	}
	s.log.Warn("peer secret mismatch: refusing a node-to-node call; give every node the same --peer-secret-file",
		"remote", remote, "caller_node", node, "method", method, "suppressed", suppressed)
}

// RoleFor returns what method needs: the role, whether a peer may also
// call it, and false if the method is not in the table (then no one may).
func RoleFor(method string) (need auth.Role, peerToo, ok bool) {
	r, ok := roleTable[method]
	return r.need, r.peerToo, ok
}
