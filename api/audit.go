package api

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
)

// maxAuditRequest bounds the request text an audit line carries.
const maxAuditRequest = 512

// audited reports whether a call of method is an operator action: every
// RPC whose role is operator (removing a peer, moving leadership, lifting a
// quarantine, taking a snapshot, untombstoning), whoever calls it.
func audited(method string) bool {
	r, ok := roleTable[method]
	return ok && r.need == auth.Operator
}

// audit logs one line for an operator action, answered or refused: who
// called (name, role, and how they proved it), from where, the request,
// and the outcome (OK or the error's reason). The line's message is
// "audit", so the trail is one filter of the server log.
func (s *Server) audit(ctx context.Context, method string, req any, err error) {
	id, idErr := s.auth.Identify(ctx)
	attrs := []any{"method", method, "caller", id.Name, "role", id.Role.String(), "via", id.Via}
	if idErr != nil {
		attrs = append(attrs, "identify_error", idErr.Error())
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		attrs = append(attrs, "remote", p.Addr.String())
	}
	if m, ok := req.(proto.Message); ok {
		attrs = append(attrs, "request", truncate(protojson.MarshalOptions{UseProtoNames: true}.Format(m), maxAuditRequest))
	}
	outcome, level := "OK", slog.LevelInfo
	if err != nil {
		r := reasonOf(err)
		outcome, level = r.String(), slog.LevelWarn
		if st, ok := asStatus(err); ok && r == metadpb.Reason_REASON_UNSPECIFIED {
			outcome = st.Code().String() // a refusal without metad's ErrorInfo
		}
		attrs = append(attrs, "err", err.Error())
	}
	attrs = append(attrs, "outcome", outcome)
	s.log.Log(ctx, level, "audit", attrs...)
}

// auditUnary writes the audit line of every unary operator action.
func (s *Server) auditUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if audited(info.FullMethod) {
		s.audit(ctx, info.FullMethod, req, err)
	}
	return resp, err
}

// auditStream writes the audit line of every streaming operator action
// (Snapshot), when the stream ends.
func (s *Server) auditStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	err := h(srv, ss)
	if audited(info.FullMethod) {
		s.audit(ss.Context(), info.FullMethod, nil, err)
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
