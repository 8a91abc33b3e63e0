package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
)

// Removals is what the Cluster service needs from membership to make an
// operator's removal stick: the incarnations the leader has seen, and the
// leader's memory of removals that is the level-1 fallback of tombstones
// (membership.Agent implements it).
type Removals interface {
	// Incarnation is the incarnation node id last reported ("" if none).
	Incarnation(id string) string
	// LearnIncarnation records the incarnation id reported when asked
	// (Members), so a removal after it tombstones that incarnation.
	LearnIncarnation(id, inc string)
	// NoteRemoved remembers that incarnation inc of id was removed.
	NoteRemoved(id, inc string)
	// ForgetRemoved drops that memory (the tombstone was lifted) and
	// reports whether there was one.
	ForgetRemoved(id string) bool
}

type noRemovals struct{}

func (noRemovals) Incarnation(string) string       { return "" }
func (noRemovals) LearnIncarnation(string, string) {}
func (noRemovals) NoteRemoved(string, string)      {}
func (noRemovals) ForgetRemoved(string) bool       { return false }

// tombstoneBeforeRemoval makes remove-peer's removal stick before the
// server leaves the configuration, so the reconcile loop cannot re-add it
// in between: at feature level 2 a replicated tombstone on the server's
// incarnation (asked of the server, else the last one the leader saw, else
// "" for every incarnation); at level 1, where no tombstone can be
// proposed while a 0.1.0 server remains, only the leader's memory.
func (s *Server) tombstoneBeforeRemoval(ctx context.Context, id string) (tombstoned bool, inc string, err error) {
	inc = s.incarnationOf(ctx, id)
	s.removals.NoteRemoved(id, inc)
	s.log.Info("remove-peer: recording the removal", "server", id, "incarnation", inc)
	level, err := s.clusterLevel(ctx)
	if err != nil || level < 2 {
		return false, inc, err
	}
	res, err := s.store.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_AddTombstone{
		AddTombstone: &fsmpb.AddTombstone{NodeId: id, Incarnation: inc}}})
	switch {
	case errors.Is(err, raftstore.ErrFeatureLevel):
		return false, inc, nil // the level was lowered under us: impossible, but memory holds
	case err != nil:
		return false, inc, err
	case res.Rejection != nil:
		return false, inc, fmt.Errorf("tombstone refused: %s", res.Rejection.Message)
	}
	return true, inc, nil
}

// incarnationOf asks node id for its incarnation, briefly (it is often
// dead when removed), and falls back to what the leader last saw.
func (s *Server) incarnationOf(ctx context.Context, id string) string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := s.peers.NodeStatus(ctx, id, false)
	if err == nil && st.Incarnation != "" {
		return st.Incarnation
	}
	s.log.Debug("remove-peer: server did not say its incarnation; using the last one seen", "server", id, "err", err,
		"seen", s.removals.Incarnation(id))
	return s.removals.Incarnation(id)
}

// Untombstone implements the Cluster service (on the leader).
func (s *Server) Untombstone(ctx context.Context, req *metadpb.UntombstoneRequest) (*metadpb.UntombstoneResponse, error) {
	if req.NodeId == "" {
		return nil, invalidArgument("node_id", "required")
	}
	if !s.store.IsLeader() {
		conn, err := s.leaderConn()
		if err != nil {
			return nil, toStatus(err)
		}
		return metadpb.NewClusterClient(conn).Untombstone(ctx, req)
	}
	level, err := s.clusterLevel(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	remembered := s.removals.ForgetRemoved(req.NodeId)
	if level < 2 {
		// Level 1: no tombstones, only this leader's memory of removals.
		if !remembered {
			return nil, notFound("node_id", "no removal of %q remembered (feature level 1 keeps no tombstones)", req.NodeId)
		}
		return &metadpb.UntombstoneResponse{}, nil
	}
	found := false
	if err := s.store.Read(ctx, func(m *fsm.Machine) error {
		_, found = m.Tombstone(req.NodeId)
		return nil
	}); err != nil {
		return nil, toStatus(err)
	}
	if !found {
		return nil, notFound("node_id", "no tombstone for %q", req.NodeId)
	}
	res, err := s.store.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_LiftTombstone{
		LiftTombstone: &fsmpb.LiftTombstone{NodeId: req.NodeId}}})
	if err != nil {
		return nil, toStatus(err)
	}
	if res.Rejection != nil {
		return nil, invalidArgument("node_id", "%s", res.Rejection.Message)
	}
	return &metadpb.UntombstoneResponse{Version: res.Version}, nil
}

// tombstones lists the tombstones of this node's state (local: status and
// members are diagnostics, not linearizable reads).
func (s *Server) tombstones() []*metadpb.Tombstone {
	var out []*metadpb.Tombstone
	_ = s.store.ReadLocal(func(m *fsm.Machine) error {
		for _, t := range m.Tombstones() {
			out = append(out, &metadpb.Tombstone{NodeId: t.NodeID, Incarnation: t.Incarnation, Version: t.Version,
				RemovedAt: timestamppb.New(time.Unix(0, t.AtUnixNano))})
		}
		return nil
	})
	return out
}

// Tombstones asks node id for the tombstones in its replicated state
// (Cluster.Members): a removed node learns from a peer that it was
// removed.
func (p *PeerClient) Tombstones(ctx context.Context, id string) ([]*metadpb.Tombstone, error) {
	_, cc, err := p.conn(id)
	if err != nil {
		return nil, err
	}
	resp, err := metadpb.NewClusterClient(cc).Members(ctx, &metadpb.MembersRequest{TombstonesOnly: true})
	if err != nil {
		return nil, err
	}
	return resp.Tombstones, nil
}
