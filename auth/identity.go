package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// PeerSecretKey is the metadata key of the insecure-mode peer secret.
const PeerSecretKey = "metad-peer-secret"

// Identity is who a caller is.
type Identity struct {
	// Name is the certificate's common name, the token's name, "peer" for
	// the peer secret, or "" for anonymous.
	Name string
	Role Role
	// Via says how: "certificate", "token", "peer-secret", "open" or "".
	Via string
}

// Settings say which identity sources are on.
type Settings struct {
	// TLS is true when the server verifies client certificates.
	TLS bool
	// Tokens, if not nil, identifies bearer tokens.
	Tokens *Tokens
	// PeerSecret identifies peers when TLS is off.
	PeerSecret string
	// LegacyPeers, without TLS, lets a node-to-node call that presents no
	// credential at all through while it reports true: the cluster's
	// feature level is still 1, so a server of a release before peer
	// secrets may be a member and forward its calls here (a rolling
	// upgrade). A wrong secret is never let through, and once every server
	// runs this release (level 2) the secret is required.
	LegacyPeers func() bool
}

// Open reports whether no authentication is configured: anonymous callers
// are operators (never peers).
func (s Settings) Open() bool { return !s.TLS && s.Tokens == nil }

// NewPeerSecret makes a random secret for a node with no shared one.
func NewPeerSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Identify reads the caller's identity from ctx (a gRPC server context).
// A presented credential that is wrong (an unknown token) is an error:
// the caller meant to be someone and is not.
func (s Settings) Identify(ctx context.Context) (Identity, error) {
	if id, ok := s.fromCertificate(ctx); ok {
		return id, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if tok, ok := bearer(md); ok {
		if s.Tokens == nil {
			return Identity{}, errUnknownToken
		}
		name, role, ok := s.Tokens.Lookup(tok)
		if !ok {
			return Identity{}, errUnknownToken
		}
		return Identity{Name: name, Role: role, Via: "token"}, nil
	}
	if !s.TLS && s.PeerSecret != "" {
		v := md.Get(PeerSecretKey)
		if len(v) == 1 && subtle.ConstantTimeCompare([]byte(v[0]), []byte(s.PeerSecret)) == 1 {
			return Identity{Name: "peer", Role: Peer, Via: "peer-secret"}, nil
		}
		if len(v) > 0 {
			// A node of another --peer-secret-file (or a stale one): it
			// meant to be a peer, and saying so lets both sides name the
			// cause instead of an anonymous refusal.
			return Identity{}, ErrPeerSecretMismatch
		}
	}
	if s.Open() {
		return Identity{Role: Operator, Via: "open"}, nil
	}
	return Identity{}, nil
}

type authError string

func (e authError) Error() string { return string(e) }

const errUnknownToken = authError("the bearer token is not in the tokens file")

// ErrPeerSecretMismatch: the caller presented a peer secret that is not
// this node's (the nodes' --peer-secret-file differ).
const ErrPeerSecretMismatch = authError("peer secret mismatch: the caller's --peer-secret-file is not this node's")

// fromCertificate returns the role of a verified client certificate.
func (s Settings) fromCertificate(ctx context.Context) (Identity, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.AuthInfo == nil {
		return Identity{}, false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return Identity{}, false
	}
	leaf := info.State.VerifiedChains[0][0]
	return Identity{Name: leaf.Subject.CommonName, Role: RoleFromCert(leaf), Via: "certificate"}, true
}

func bearer(md metadata.MD) (string, bool) {
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok && tok != "" {
			return tok, true
		}
	}
	return "", false
}

// BearerCredentials sends token on every call (grpc.WithPerRPCCredentials).
// It demands a secure transport unless allowInsecure: a token sent in
// clear text is a token given away.
type BearerCredentials struct {
	Token         string
	AllowInsecure bool
}

func (b BearerCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.Token}, nil
}

func (b BearerCredentials) RequireTransportSecurity() bool { return !b.AllowInsecure }

// PeerSecretCredentials sends the insecure-mode peer secret.
type PeerSecretCredentials string

// CallerNodeKey is the metadata key a node names itself by on its calls to
// other nodes. It is a claim, not an identity: it only lets a node that
// refuses the call say who it refused.
const CallerNodeKey = "metad-caller-node"

// CallerNode sends the calling node's id (CallerNodeKey).
type CallerNode string

func (c CallerNode) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{CallerNodeKey: string(c)}, nil
}

func (CallerNode) RequireTransportSecurity() bool { return false }

func (p PeerSecretCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{PeerSecretKey: string(p)}, nil
}

func (PeerSecretCredentials) RequireTransportSecurity() bool { return false }

// PresentsCredential reports whether the caller in ctx presented any
// credential: a verified certificate, a bearer token or a peer secret.
func PresentsCredential(ctx context.Context) bool {
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
			return true
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	_, hasToken := bearer(md)
	return hasToken || len(md.Get(PeerSecretKey)) > 0
}
