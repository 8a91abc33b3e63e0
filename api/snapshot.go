package api

import (
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
)

// maxSnapshotChunk bounds the data in one SnapshotChunk; a chunk also
// stays 1 KiB under MaxMessageBytes (at least 64 KiB), the room left for
// the message's own fields.
const maxSnapshotChunk = 1 << 20

// Snapshot implements the Cluster service: a consistent snapshot taken on
// this node (raftstore.Store.Checkpoint, a linearizable read), streamed in
// chunks. Any member answers; a follower spares the leader the work.
func (s *Server) Snapshot(_ *metadpb.SnapshotRequest, stream metadpb.Cluster_SnapshotServer) error {
	ctx := stream.Context()
	cp, err := s.store.Checkpoint(ctx)
	if err != nil {
		return toStatus(err)
	}
	defer cp.Close()
	meta := &metadpb.SnapshotMeta{NodeId: cp.NodeID, Index: cp.Index, Term: cp.Term, TakenAt: timestamppb.New(cp.TakenAt)}
	for _, sv := range cp.Servers {
		meta.Servers = append(meta.Servers, &metadpb.RaftServer{NodeId: sv.ID, RaftAddr: sv.Address, Suffrage: string(sv.Suffrage)})
	}
	if err := stream.Send(&metadpb.SnapshotChunk{Meta: meta}); err != nil {
		return err
	}
	w := &chunkWriter{send: stream.Send, buf: make([]byte, 0, min(maxSnapshotChunk, s.cfg.MaxMessageBytes-1024))}
	n, err := cp.WriteTo(w)
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		return toStatus(fmt.Errorf("api: snapshot stream after %d bytes: %w", n, err))
	}
	s.log.Info("api: snapshot streamed", "index", cp.Index, "term", cp.Term, "bytes", n)
	return nil
}

// chunkWriter cuts a byte stream into SnapshotChunks of cap(buf) bytes.
type chunkWriter struct {
	send func(*metadpb.SnapshotChunk) error
	buf  []byte
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), cap(w.buf)-len(w.buf))
		w.buf = append(w.buf, p[:n]...)
		p, written = p[n:], written+n
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.send(&metadpb.SnapshotChunk{Data: w.buf})
	w.buf = make([]byte, 0, cap(w.buf))
	return err
}
