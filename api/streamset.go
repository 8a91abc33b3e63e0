package api

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// CommitObject commits a stream-set object: one Raft command registering
// the object version and appending to every stream it names, all or none
// (fsm/streamset.go). The server's own bounds (Config.MaxObjectStreams,
// MaxCommandBytes) are checked before anything is proposed.
func (s *Server) CommitObject(ctx context.Context, req *metadpb.CommitObjectRequest) (*metadpb.CommitObjectResponse, error) {
	if n := len(req.Appends); n > s.cfg.MaxObjectStreams {
		s.objectMetrics.refused.WithLabelValues("streams").Inc()
		return nil, tooLarge("appends", "%d appends; this server commits at most %d streams per object (--max-object-streams)", n, s.cfg.MaxObjectStreams)
	}
	cmd := &fsmpb.Command{Op: &fsmpb.Command_CommitObject{CommitObject: objectToCommand(req)}}
	cmd.RequestId = req.RequestId
	if n := proto.Size(cmd); n > s.cfg.MaxCommandBytes {
		s.objectMetrics.refused.WithLabelValues("bytes").Inc()
		return nil, tooLarge("appends", "the command is %d bytes; this server commits at most %d bytes per object (--max-command-bytes)", n, s.cfg.MaxCommandBytes)
	}
	if rej := fsm.Validate(cmd); rej != nil {
		return nil, rejectionError(rej)
	}
	res, err := s.peer.Propose(ctx, cmd)
	if err != nil {
		return nil, toStatus(err)
	}
	if res.Rejection != nil {
		return nil, objectRefusal(res)
	}
	s.objectMetrics.streams.Observe(float64(len(req.Appends)))
	ends := make([]uint64, len(req.Appends))
	for i, a := range req.Appends {
		ends[i] = a.End
	}
	return &metadpb.CommitObjectResponse{Version: res.Version, CommittedEnds: ends}, nil
}

func objectToCommand(req *metadpb.CommitObjectRequest) *fsmpb.CommitObject {
	appends := make([]*fsmpb.ObjectAppend, len(req.Appends))
	for i, a := range req.Appends {
		if a == nil {
			continue // Validate names it
		}
		appends[i] = &fsmpb.ObjectAppend{
			StreamId: a.StreamId, WriterEpoch: a.WriterEpoch, ExpectedStart: a.ExpectedStart, End: a.End,
			Bytes: byteRangeToFSM(a.Bytes), IndexGen0: a.IndexGen0, DataCrc32C: a.DataCrc32C,
		}
	}
	return &fsmpb.CommitObject{Object: objectToFSM(req.Object), Size: req.Size, Appends: appends}
}

// objectRefusal is a refused CommitObject's status: the first refused
// append's (or the object's) reason and field, a CommitObjectRefusal
// naming every refused append, and a BadRequest violation for each.
func objectRefusal(res *fsmpb.Result) error {
	err := rejectionError(res.Rejection)
	if len(res.AppendRejections) == 0 {
		return err
	}
	st, _ := status.FromError(err)
	refusal := &metadpb.CommitObjectRefusal{Appends: make([]*metadpb.AppendRefusal, len(res.AppendRejections))}
	violations := make([]*errdetails.BadRequest_FieldViolation, len(res.AppendRejections))
	for i, a := range res.AppendRejections {
		refusal.Appends[i] = &metadpb.AppendRefusal{
			Index: a.Index, StreamId: a.StreamId, Reason: a.Rejection.Code.String(), Field: a.Rejection.Field,
			Message: a.Rejection.Message, CommittedEnd: a.CommittedEnd, WriterEpoch: a.WriterEpoch,
		}
		violations[i] = &errdetails.BadRequest_FieldViolation{Field: a.Rejection.Field, Description: a.Rejection.Message}
	}
	// Keep the ErrorInfo and RetryInfo; replace the one-field BadRequest
	// with one naming every refused append.
	details := []protoadapt.MessageV1{refusal, &errdetails.BadRequest{FieldViolations: violations}}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			details = append(details, d)
		case *errdetails.RetryInfo:
			details = append(details, d)
		}
	}
	out, derr := status.New(st.Code(), st.Message()).WithDetails(details...)
	if derr != nil {
		return errors.Join(err, derr)
	}
	return out.Err()
}

func tooLarge(field, format string, args ...any) error {
	return fail(metadpb.Reason_TOO_LARGE, sprintf(format, args...), field)
}

// objectMetrics are CommitObject's metrics.
type objectMetrics struct {
	streams prometheus.Histogram
	refused *prometheus.CounterVec
}

func newObjectMetrics(reg prometheus.Registerer) *objectMetrics {
	m := &objectMetrics{
		streams: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_commit_object_streams",
			Help:    "Streams per committed stream-set object (CommitObject).",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000},
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_commit_object_refused_total",
			Help: "CommitObject calls refused by a bound of this server before proposing: streams (--max-object-streams) or bytes (--max-command-bytes).",
		}, []string{"bound"}),
	}
	if reg != nil {
		reg.MustRegister(m.streams, m.refused)
	}
	return m
}
