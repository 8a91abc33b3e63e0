package api

import (
	"context"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/readpath"
	"github.com/metad/metad/resolver"
)

// apply validates a command, proposes it (on the leader, wherever this node
// is) and turns a refusal into its status. Validation first means a
// malformed request is refused without a trip through Raft, naming the
// request field at fault.
func (s *Server) apply(ctx context.Context, requestID string, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	return s.applyRenamed(ctx, requestID, cmd, nil)
}

// applyRenamed is apply for requests whose fields are not named as the
// command's: rename maps a command field (after the operation prefix) to
// the request's, by leading path element.
func (s *Server) applyRenamed(ctx context.Context, requestID string, cmd *fsmpb.Command, rename map[string]string) (*fsmpb.Result, error) {
	cmd.RequestId = requestID
	if rej := fsm.Validate(cmd); rej != nil {
		return nil, rejectionError(renameField(rej, rename))
	}
	res, err := s.peer.Propose(ctx, cmd)
	if err != nil {
		return nil, toStatus(err)
	}
	if res.Rejection != nil {
		return nil, rejectionError(renameField(res.Rejection, rename))
	}
	return res, nil
}

// renameField rewrites "op.first.rest" to "op.renamed.rest".
func renameField(rej *fsmpb.Rejection, rename map[string]string) *fsmpb.Rejection {
	op, rest, ok := strings.Cut(rej.Field, ".")
	if !ok || rename == nil {
		return rej
	}
	head, tail, _ := strings.Cut(rest, ".")
	to, ok := rename[head]
	if !ok {
		return rej
	}
	field := op + "." + to
	if tail != "" {
		field += "." + tail
	}
	return &fsmpb.Rejection{Code: rej.Code, Field: field, Message: rej.Message}
}

func (s *Server) CreateStream(ctx context.Context, req *metadpb.CreateStreamRequest) (*metadpb.CreateStreamResponse, error) {
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: req.Name}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.CreateStreamResponse{StreamId: res.StreamId, Version: res.Version}, nil
}

func (s *Server) OpenForWrite(ctx context.Context, req *metadpb.OpenForWriteRequest) (*metadpb.OpenForWriteResponse, error) {
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: req.StreamId}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.OpenForWriteResponse{WriterEpoch: res.WriterEpoch, Version: res.Version}, nil
}

func (s *Server) CommitAppend(ctx context.Context, req *metadpb.CommitAppendRequest) (*metadpb.CommitAppendResponse, error) {
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: appendToFSM(req)}})
	if err != nil {
		return nil, err
	}
	return &metadpb.CommitAppendResponse{CommittedEnd: res.CommittedEnd, Version: res.Version}, nil
}

func (s *Server) PublishGeneration(ctx context.Context, req *metadpb.PublishGenerationRequest) (*metadpb.PublishGenerationResponse, error) {
	records := make([]*fsmpb.IndexRecord, len(req.Records))
	for i, r := range req.Records {
		records[i] = recordToFSM(r)
	}
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
		StreamId: req.StreamId, View: viewToFSM(req.View), Generation: req.Generation, WriterEpoch: req.WriterEpoch,
		Coverage: rangeToFSM(req.Coverage), Records: records, Complete: req.Complete,
	}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.PublishGenerationResponse{Generation: res.Generation, Version: res.Version}, nil
}

func (s *Server) RetireGeneration(ctx context.Context, req *metadpb.RetireGenerationRequest) (*metadpb.RetireGenerationResponse, error) {
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_RetireGeneration{RetireGeneration: &fsmpb.RetireGeneration{
		StreamId: req.StreamId, View: viewToFSM(req.View), Generation: req.Generation,
	}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.RetireGenerationResponse{Version: res.Version}, nil
}

func (s *Server) Trim(ctx context.Context, req *metadpb.TrimRequest) (*metadpb.TrimResponse, error) {
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: req.StreamId, Offset: req.Offset}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.TrimResponse{Trim: res.Trim, CommittedEnd: res.CommittedEnd, Version: res.Version}, nil
}

func (s *Server) Seal(ctx context.Context, req *metadpb.SealRequest) (*metadpb.SealResponse, error) {
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_Seal{Seal: &fsmpb.Seal{StreamId: req.StreamId}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.SealResponse{CommittedEnd: res.CommittedEnd, Version: res.Version}, nil
}

func (s *Server) DeleteStream(ctx context.Context, req *metadpb.DeleteStreamRequest) (*metadpb.DeleteStreamResponse, error) {
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_DeleteStream{DeleteStream: &fsmpb.DeleteStream{StreamId: req.StreamId}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.DeleteStreamResponse{Version: res.Version}, nil
}

func (s *Server) RegisterObject(ctx context.Context, req *metadpb.RegisterObjectRequest) (*metadpb.RegisterObjectResponse, error) {
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{
		Object: objectToFSM(req.Object), Size: req.Size,
	}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.RegisterObjectResponse{Version: res.Version}, nil
}

func (s *Server) Pin(ctx context.Context, req *metadpb.PinRequest) (*metadpb.PinResponse, error) {
	if req.Ttl == nil {
		return nil, invalidArgument("ttl", "required")
	}
	if req.Holder == readpath.SharedHolder {
		return nil, invalidArgument("holder", "%q is reserved for pins shared by resolves", readpath.SharedHolder)
	}
	res, err := s.applyRenamed(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{
		Object: objectToFSM(req.Object), Holder: req.Holder, TtlNanos: int64(req.Ttl.AsDuration()),
	}}}, map[string]string{"ttl_nanos": "ttl"})
	if err != nil {
		return nil, err
	}
	return &metadpb.PinResponse{PinId: res.PinId, Expiry: timestamppb.New(unixNano(res.PinExpiryUnixNano)), Version: res.Version}, nil
}

// ReleasePin ends an explicit pin. A shared pin is refused: readers that
// were handed it rely on it until it expires (G9). The check reads
// linearizably, so it sees every pin whose id the caller can have been
// given, and a pin's holder never changes.
func (s *Server) ReleasePin(ctx context.Context, req *metadpb.ReleasePinRequest) (*metadpb.ReleasePinResponse, error) {
	shared := false
	err := s.read(ctx, metadpb.Consistency_LINEARIZABLE, func(m *fsm.Machine) error {
		p, ok := m.Pin(req.PinId)
		shared = ok && p.Holder == readpath.SharedHolder
		return nil
	})
	if err != nil {
		return nil, err
	}
	if shared {
		return nil, pinShared(req.PinId)
	}
	res, err := s.apply(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_ReleasePin{ReleasePin: &fsmpb.ReleasePin{PinId: req.PinId}}})
	if err != nil {
		return nil, err
	}
	return &metadpb.ReleasePinResponse{Version: res.Version}, nil
}

// ReportCandidateFailure takes a reader's word that it could not use a
// candidate, and checks it against the object store before anything
// changes (G10): nothing a client reports may make a committed offset
// unreadable while intact bytes for it exist. Only a failure the store
// confirms — the version missing, another version, corrupt bytes — is
// committed, under the kind the store showed, and quarantines the record;
// anything else changes nothing and the answer says why.
func (s *Server) ReportCandidateFailure(ctx context.Context, req *metadpb.ReportCandidateFailureRequest) (*metadpb.ReportCandidateFailureResponse, error) {
	if req.Candidate == nil || req.Candidate.Key == nil {
		return nil, invalidArgument("candidate.key", "required")
	}
	key := indexKeyToFSM(req.Candidate.Key)
	if rej := fsm.Validate(&fsmpb.Command{RequestId: req.RequestId, Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: key.PB(), Version: req.Candidate.Version, Kind: kindToFSM(req.Kind), Detail: req.Detail,
	}}}); rej != nil {
		return nil, rejectionError(renameField(rej, map[string]string{"key": "candidate.key", "version": "candidate.version"}))
	}
	// A reader could not use this candidate: no cached hint may offer it
	// again, whatever the report's outcome.
	s.resolver.Invalidate(resolver.CandidateID{Key: key, Version: req.Candidate.Version})
	kind, verdict, err := s.resolver.ConfirmFailure(ctx, key, req.Candidate.Version, kindToFSM(req.Kind))
	if err != nil {
		return nil, toStatus(err)
	}
	if kind == fsm.FailureUnspecified {
		s.metrics.reports.WithLabelValues("unconfirmed").Inc()
		s.log.Info("failure report not confirmed: nothing changed", "key", key.String(), "version", req.Candidate.Version,
			"reported", req.Kind.String(), "verdict", verdict)
		return &metadpb.ReportCandidateFailureResponse{Verdict: verdict}, nil
	}
	res, err := s.applyRenamed(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: key.PB(), Version: req.Candidate.Version, Kind: kind, Detail: req.Detail,
	}}}, map[string]string{"key": "candidate.key", "version": "candidate.version"})
	if err != nil {
		return nil, err
	}
	s.metrics.reports.WithLabelValues("confirmed").Inc()
	s.log.Warn("failure report confirmed by the object store", "key", key.String(), "version", req.Candidate.Version,
		"kind", kind.String(), "quarantined", res.Quarantined, "verdict", verdict)
	return &metadpb.ReportCandidateFailureResponse{Quarantined: res.Quarantined, Version: res.Version, Confirmed: true, Verdict: verdict}, nil
}
