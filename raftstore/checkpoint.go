package raftstore

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// Checkpoint is a consistent, point-in-time copy of the replicated state,
// taken on a live node: a clone of the state machine at a linearizable
// read index, so it holds every write acknowledged before Checkpoint was
// called. It is what `metad snapshot save` streams; WriteTo writes it in
// the snapshot stream format (doc.go), which RestoreDir and
// SummarizeStream read.
type Checkpoint struct {
	// NodeID is the node that took it.
	NodeID string
	// Index is the raft index the state reflects (the stream header's).
	Index uint64
	// Term is the raft term of the entry at Index, or this node's current
	// term when that entry is no longer in its log.
	Term uint64
	// TakenAt is this node's wall clock when the clone was taken.
	TakenAt time.Time
	// Servers is the raft configuration when it was taken.
	Servers []Server
	// ClusterID is the state's cluster id ("" before one is set).
	ClusterID string

	snap *adapterSnapshot
}

// Checkpoint takes a consistent copy of the state, on any node: it waits
// for a linearizable read index (as Read does), clones the state machine
// once that index is applied, and returns without holding any lock, so
// writing the copy out does not hold up the node. Errors are Read's.
func (s *Store) Checkpoint(ctx context.Context) (*Checkpoint, error) {
	index, err := s.readIndexAnywhere(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.fsm.waitApplied(ctx, index, s.closing); err != nil {
		return nil, err
	}
	as := s.fsm.clone()
	servers, err := s.Configuration()
	if err != nil {
		as.Release()
		return nil, err
	}
	return &Checkpoint{
		NodeID: s.cfg.NodeID, Index: as.through, Term: s.termAt(as.through),
		TakenAt: wall.Now(), Servers: servers, ClusterID: as.m.ClusterID(), snap: as,
	}, nil
}

// Close releases the checkpoint's hold on the state (a view of the state
// store). Call it when done writing; safe to call twice.
func (c *Checkpoint) Close() { c.snap.Release() }

// termAt returns the term of the log entry at index, falling back to the
// newest snapshot's term when that is the index, and otherwise to the
// current term (an upper bound).
func (s *Store) termAt(index uint64) uint64 {
	var l raft.Log
	if err := s.logs.GetLog(index, &l); err == nil {
		return l.Term
	}
	if metas, err := s.snaps.List(); err == nil && len(metas) > 0 && metas[0].Index == index {
		return metas[0].Term
	}
	return s.raft.CurrentTerm()
}

// WriteTo writes the checkpoint as a snapshot stream: the 16-byte header,
// then fsm's snapshot format.
func (c *Checkpoint) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	if err := c.snap.write(cw); err != nil {
		return cw.n, fmt.Errorf("raftstore: write checkpoint: %w", err)
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
