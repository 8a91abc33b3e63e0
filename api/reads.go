package api

import (
	"context"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
)

// read runs fn against this node's state: after a linearizable read index
// by default, or as the node has it with the explicit STALE opt-in.
func (s *Server) read(ctx context.Context, c metadpb.Consistency, fn func(*fsm.Machine) error) error {
	var err error
	switch plantedConsistency(c) { // the fault seam (faults_off.go): c
	case metadpb.Consistency_LINEARIZABLE:
		err = s.store.Read(ctx, fn)
	case metadpb.Consistency_STALE:
		err = s.store.ReadLocal(fn)
	default:
		return invalidArgument("consistency", "unknown consistency %d", c)
	}
	if _, isStatus := asStatus(err); isStatus {
		return err
	}
	return toStatus(err)
}

func (s *Server) DescribeStream(ctx context.Context, req *metadpb.DescribeStreamRequest) (*metadpb.DescribeStreamResponse, error) {
	if (req.StreamId == 0) == (req.Name == "") {
		return nil, invalidArgument("stream_id", "give exactly one of stream_id and name")
	}
	if err := s.awaitVersion(ctx, req); err != nil {
		return nil, err
	}
	resp := &metadpb.DescribeStreamResponse{}
	err := s.read(ctx, req.Consistency, func(m *fsm.Machine) error {
		st, ok := m.Stream(req.StreamId)
		if req.Name != "" {
			st, ok = m.StreamByName(req.Name)
		}
		if !ok && req.Name != "" {
			return streamNotFound("name", "stream %q does not exist", req.Name)
		}
		if !ok {
			return streamNotFound("stream_id", "stream %d does not exist", req.StreamId)
		}
		resp.Stream, resp.AppliedIndex = streamPB(st), m.AppliedIndex()
		for _, v := range []fsm.View{fsm.Committed, fsm.TopicCompacted} {
			for _, g := range m.Generations(st.ID, v) {
				if v == fsm.Committed && g.Number == 0 {
					// Generation 0 speaks for every committed offset.
					g.Coverage = fsm.Range{Start: st.Trim, End: st.CommittedEnd}
				}
				resp.Generations = append(resp.Generations, generationPB(g))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *Server) ListStreams(ctx context.Context, req *metadpb.ListStreamsRequest) (*metadpb.ListStreamsResponse, error) {
	resp := &metadpb.ListStreamsResponse{}
	err := s.read(ctx, req.Consistency, func(m *fsm.Machine) error {
		for _, st := range m.Streams(req.AfterId, s.limit(req.Limit)) {
			resp.Streams = append(resp.Streams, streamPB(st))
		}
		resp.AppliedIndex = m.AppliedIndex()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *Server) ListIndex(ctx context.Context, req *metadpb.ListIndexRequest) (*metadpb.ListIndexResponse, error) {
	if !fsm.ValidView(viewToFSM(req.View)) {
		return nil, invalidArgument("view", "must be COMMITTED or TOPIC_COMPACTED")
	}
	resp := &metadpb.ListIndexResponse{}
	err := s.read(ctx, req.Consistency, func(m *fsm.Machine) error {
		if _, ok := m.Stream(req.StreamId); !ok {
			return streamNotFound("stream_id", "stream %d does not exist", req.StreamId)
		}
		for _, r := range m.Records(req.StreamId, viewToFSM(req.View), req.Generation, req.From, s.limit(req.Limit)) {
			resp.Records = append(resp.Records, storedRecordPB(r))
		}
		resp.AppliedIndex = m.AppliedIndex()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *Server) ListEvidence(ctx context.Context, req *metadpb.ListEvidenceRequest) (*metadpb.ListEvidenceResponse, error) {
	resp := &metadpb.ListEvidenceResponse{}
	err := s.read(ctx, req.Consistency, func(m *fsm.Machine) error {
		if _, ok := m.Stream(req.StreamId); !ok {
			return streamNotFound("stream_id", "stream %d does not exist", req.StreamId)
		}
		for _, e := range m.Evidence(req.StreamId, req.From, s.limit(req.Limit)) {
			resp.Evidence = append(resp.Evidence, evidencePB(e))
		}
		resp.AppliedIndex = m.AppliedIndex()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *Server) DescribeObject(ctx context.Context, req *metadpb.DescribeObjectRequest) (*metadpb.DescribeObjectResponse, error) {
	if req.Key == "" {
		return nil, invalidArgument("key", "required")
	}
	resp := &metadpb.DescribeObjectResponse{}
	err := s.read(ctx, req.Consistency, func(m *fsm.Machine) error {
		versions := m.ObjectVersions(req.Key)
		if len(versions) == 0 {
			return notFound("key", "object %q is not registered", req.Key)
		}
		newest := versions[0]
		for _, o := range versions {
			resp.Versions = append(resp.Versions, objectInfoPB(o))
			if o.Version > newest.Version {
				newest = o
			}
		}
		resp.Object, resp.AppliedIndex = objectInfoPB(newest), m.AppliedIndex()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func unixNano(ns int64) time.Time { return time.Unix(0, ns) }
