package api

import (
	"context"
	"fmt"
	"sync"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// Rolling upgrades (G15, fsm/level.go): the leader raises the cluster's
// feature level once every server of the Raft configuration reports, in
// LocalStatus, that its binary applies it. A server it cannot ask blocks
// the raise: the level moves only on every server's word, because a
// server that cannot apply a committed entry has to stop.

// serversLevel returns the lowest feature level the servers of the
// configuration apply, or an error naming a server it could not ask.
func (s *Server) serversLevel(ctx context.Context) (uint32, error) {
	servers, err := s.store.Configuration()
	if err != nil {
		return 0, err
	}
	statuses := make([]*metadpb.NodeStatus, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = s.nodeStatus(ctx, srv, false)
		}()
	}
	wg.Wait()
	lowest := fsm.MaxLevel
	for _, st := range statuses {
		if st.Error != "" {
			return 0, fmt.Errorf("server %s: %s", st.NodeId, st.Error)
		}
		lowest = min(lowest, max(st.FeatureLevel, fsm.BaseLevel))
	}
	return lowest, nil
}

// RaiseFeatureLevel proposes SetFeatureLevel if every server applies a
// higher level than the state holds, and returns the state's level after.
// Only the leader's proposal can succeed; it is safe to call repeatedly.
func (s *Server) RaiseFeatureLevel(ctx context.Context) (uint32, error) {
	current, err := s.clusterLevel(ctx)
	if err != nil || current >= fsm.MaxLevel {
		return current, err
	}
	lowest, err := s.serversLevel(ctx)
	if err != nil || lowest <= current {
		return current, err
	}
	res, err := s.propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{
		SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: lowest}}})
	if err != nil {
		return current, err
	}
	if res.Rejection != nil {
		return current, rejectionError(res.Rejection)
	}
	s.log.Info("cluster feature level raised: every server applies it", "from", current, "to", lowest, "version", res.Version)
	return lowest, nil
}

// clusterLevel is the feature level of this node's applied state.
func (s *Server) clusterLevel(ctx context.Context) (uint32, error) {
	var level uint32
	err := s.store.ReadLocal(func(m *fsm.Machine) error {
		level = m.Level()
		return nil
	})
	return level, err
}
