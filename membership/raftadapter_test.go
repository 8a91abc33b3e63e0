package membership

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// raftHandle adapts an in-memory *raft.Raft to Raft for the in-process
// cluster tests (harness_test.go). In metad, raftstore owns hashicorp/raft
// and node adapts *raftstore.Store; this package's production code never
// sees raft's types. Only tests import raft here, to run the agents over
// real elections and real configuration changes without the rest of metad.
type raftHandle struct{ r *raft.Raft }

var _ Raft = raftHandle{}

func (h raftHandle) IsLeader() bool { return h.r.State() == raft.Leader }

func (h raftHandle) Configuration() ([]Server, error) {
	f := h.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	return fromRaft(f.Configuration().Servers), nil
}

func (h raftHandle) AddNonvoter(ctx context.Context, id, addr string) (uint64, error) {
	return wait(h.r.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, time.Second))
}

func (h raftHandle) AddVoter(ctx context.Context, id, addr string) (uint64, error) {
	return wait(h.r.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, time.Second))
}

func (h raftHandle) RemoveServer(ctx context.Context, id string) (uint64, error) {
	return wait(h.r.RemoveServer(raft.ServerID(id), 0, time.Second))
}

func wait(f raft.IndexFuture) (uint64, error) {
	if err := f.Error(); err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// Stats reads raft's stats map as raftstore.Store.Progress does.
func (h raftHandle) Stats() (ServerStats, error) {
	s := h.r.Stats()
	out := ServerStats{LastIndex: h.r.LastIndex()}
	var err error
	switch lc := s["last_contact"]; lc {
	case "never":
		out.LastContact = -1
	case "0":
	default:
		if out.LastContact, err = time.ParseDuration(lc); err != nil {
			return ServerStats{}, fmt.Errorf("last_contact %q: %w", lc, err)
		}
	}
	if out.LastTerm, err = strconv.ParseUint(s["last_log_term"], 10, 64); err != nil {
		return ServerStats{}, fmt.Errorf("last_log_term %q: %w", s["last_log_term"], err)
	}
	return out, nil
}

// bootstrap bootstraps r as node's Hooks.Bootstrap does.
func (h raftHandle) bootstrap(servers []Server) error {
	var conf raft.Configuration
	for _, s := range servers {
		suffrage := raft.Nonvoter
		if s.Voter {
			suffrage = raft.Voter
		}
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Address), Suffrage: suffrage})
	}
	err := h.r.BootstrapCluster(conf).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("%w: %w", ErrAlreadyBootstrapped, err)
	}
	return err
}

func fromRaft(servers []raft.Server) []Server {
	out := make([]Server, len(servers))
	for i, s := range servers {
		out[i] = Server{ID: string(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter}
	}
	return out
}
