package api

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
)

// TestRoleTableCoversEveryRPC walks every service of the metad proto
// package (and the ServiceDescs this server registers) and fails on an
// RPC the role table does not name, or a table row naming no RPC.
func TestRoleTableCoversEveryRPC(t *testing.T) {
	seen := map[string]bool{}
	protoregistry.GlobalFiles.RangeFilesByPackage("metad.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				seen["/"+string(sd.FullName())+"/"+string(sd.Methods().Get(j).Name())] = true
			}
		}
		return true
	})
	for _, desc := range []grpc.ServiceDesc{metadpb.Metad_ServiceDesc, metadpb.Cluster_ServiceDesc, metadpb.Peer_ServiceDesc} {
		for _, m := range desc.Methods {
			seen["/"+desc.ServiceName+"/"+m.MethodName] = true
		}
		for _, m := range desc.Streams {
			seen["/"+desc.ServiceName+"/"+m.StreamName] = true
		}
	}
	if len(seen) < 20 {
		t.Fatalf("found only %d RPCs: the walk is broken", len(seen))
	}
	for m := range seen {
		if _, _, ok := RoleFor(m); !ok {
			t.Errorf("RPC %s is missing from roleTable", m)
		}
	}
	for m := range roleTable {
		if !seen[m] {
			t.Errorf("roleTable names %s, which no service has", m)
		}
	}
	for m, r := range roleTable {
		isPeerService := len(m) > len("/metad.v1.Peer/") && m[:len("/metad.v1.Peer/")] == "/metad.v1.Peer/"
		if isPeerService != (r.need == auth.Peer) {
			t.Errorf("%s needs %s: only metad.v1.Peer needs peer, and all of it does", m, r.need)
		}
	}
}

// TestAuthorizeOpenModeClosesOnlyPeer: with neither TLS nor tokens every
// client RPC is served to anonymous callers, and the Peer service only to
// the holder of the peer secret.
func TestAuthorizeOpenModeClosesOnlyPeer(t *testing.T) {
	s := auth.Settings{PeerSecret: "0123456789abcdef0123"}
	for m, r := range roleTable {
		err := authorize(context.Background(), s, m)
		if r.need == auth.Peer {
			checkDenied(t, err, codes.Unauthenticated, m)
			withSecret := metadata.NewIncomingContext(context.Background(), metadata.Pairs(auth.PeerSecretKey, s.PeerSecret))
			if err := authorize(withSecret, s, m); err != nil {
				t.Errorf("%s with the peer secret: %v", m, err)
			}
			wrong := metadata.NewIncomingContext(context.Background(), metadata.Pairs(auth.PeerSecretKey, "wrong-secret-0123456789"))
			checkDenied(t, authorize(wrong, s, m), codes.Unauthenticated, m)
			continue
		}
		if err != nil {
			t.Errorf("%s in open mode: %v", m, err)
		}
	}
	if err := authorize(context.Background(), s, "/grpc.health.v1.Health/Check"); err != nil {
		t.Errorf("health must stay open: %v", err)
	}
	checkDenied(t, authorize(context.Background(), s, "/metad.v1.Metad/NotInTheTable"), codes.PermissionDenied, "/metad.v1.Metad/NotInTheTable")
}

// checkDenied asserts err is code with an ErrorInfo naming method.
func checkDenied(t *testing.T, err error, code codes.Code, method string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Errorf("%s: got %v, want %v", method, err, code)
		return
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if want := map[codes.Code]metadpb.Reason{codes.Unauthenticated: metadpb.Reason_UNAUTHENTICATED,
				codes.PermissionDenied: metadpb.Reason_PERMISSION_DENIED}[code]; info.Reason != want.String() {
				t.Errorf("%s: reason %q", method, info.Reason)
			}
			if info.Metadata["method"] != method || info.Domain != ErrorDomain {
				t.Errorf("%s: ErrorInfo %v does not name the method", method, info)
			}
			return
		}
	}
	t.Errorf("%s: no ErrorInfo in %v", method, err)
}

// TestAuthorizeLegacyPeers: without TLS, while the cluster's feature level
// is 1 (a server of the previous release, which knows no peer secret, may
// be a member), a node-to-node call that presents no credential is let
// through; a wrong secret never is, and at level 2 the secret is required.
// TLS ignores the allowance.
func TestAuthorizeLegacyPeers(t *testing.T) {
	legacy := true
	s := auth.Settings{PeerSecret: "s3cret", LegacyPeers: func() bool { return legacy }}
	const method = "/metad.v1.Peer/Propose"
	if err := authorize(context.Background(), s, method); err != nil {
		t.Errorf("level 1, no credential: %v", err)
	}
	wrong := metadata.NewIncomingContext(context.Background(), metadata.Pairs(auth.PeerSecretKey, "guess"))
	if err := authorize(wrong, s, method); err == nil {
		t.Error("level 1, a wrong secret: let through")
	}
	legacy = false
	if err := authorize(context.Background(), s, method); err == nil {
		t.Error("level 2, no credential: let through")
	}
	right := metadata.NewIncomingContext(context.Background(), metadata.Pairs(auth.PeerSecretKey, "s3cret"))
	if err := authorize(right, s, method); err != nil {
		t.Errorf("level 2, the secret: %v", err)
	}
	legacy = true
	s.TLS = true
	checkDenied(t, authorize(context.Background(), s, method), codes.Unauthenticated, method)
}

// A wrong peer secret is refused as such (IsPeerSecretRefusal, so that the
// caller can name the flag); no credential at all is an ordinary refusal.
func TestAuthorizeNamesAWrongPeerSecret(t *testing.T) {
	s := auth.Settings{PeerSecret: "s3cret"}
	const method = "/metad.v1.Peer/LocalStatus"
	wrong := metadata.NewIncomingContext(context.Background(), metadata.Pairs(auth.PeerSecretKey, "guess"))
	err := authorize(wrong, s, method)
	checkDenied(t, err, codes.Unauthenticated, method)
	if !IsPeerSecretRefusal(err) || !strings.Contains(err.Error(), "peer secret mismatch") {
		t.Errorf("a wrong secret: %v, want a peer secret refusal", err)
	}
	if err := authorize(context.Background(), s, method); err == nil || IsPeerSecretRefusal(err) {
		t.Errorf("no credential: %v, want a refusal that is not about the secret", err)
	}
}
