package raftstore

import (
	"log/slog"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// ApplyObserver learns of every command the state machine applies, in log
// order, and of every restore from a snapshot. Package watch's hub is the
// one implementation: it turns applied commands into stream events.
//
// Both methods run on raft's FSM goroutine under the machine's write lock,
// so a Read function sees the machine and the observer's view of it at the
// same point. They must be quick and must not block or call back into the
// Store; m must not be kept or changed.
type ApplyObserver interface {
	// Applied follows each command applied at index, with its result
	// (refusals and deduplicated retries included).
	Applied(m *fsm.Machine, index uint64, cmd *fsmpb.Command, res *fsmpb.Result)
	// Restored follows a restore: the state is now the snapshot at index,
	// and the commands up to it were never observed here.
	Restored(index uint64)
}

// OpenObserved is Open with an observer of the apply path, set before raft
// starts so that it also sees the startup restore and log replay.
func OpenObserved(cfg Config, peers Peers, logger *slog.Logger, obs ApplyObserver) (*Store, error) {
	return open(cfg, peers, logger, openOptions{observer: obs})
}

// applyEntry applies one committed command, telling the observer if there
// is one. Without an observer this is exactly Machine.ApplyEntry; an entry
// this binary cannot apply is not observed.
func (a *fsmAdapter) applyEntry(index uint64, data []byte) (*fsmpb.Result, error) {
	if a.observer == nil {
		return a.m.ApplyEntry(index, data)
	}
	cmd, res, err := a.m.ApplyEntryCommand(index, data)
	if err != nil {
		return nil, err
	}
	a.observer.Applied(a.m, index, cmd, res)
	return res, nil
}
