package fsm

import (
	"fmt"

	"github.com/metad/metad/fsm/fsmpb"
)

// ApplyEntryCommand is ApplyEntry that also returns the decoded command,
// for a caller that observes what was applied (raftstore's ApplyObserver,
// the watch feed) without decoding the entry twice.
func (m *Machine) ApplyEntryCommand(index uint64, data []byte) (*fsmpb.Command, *fsmpb.Result, error) {
	cmd, err := DecodeCommand(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: entry %d: %w", ErrUnsupported, index, err)
	}
	if err := supported(index, cmd); err != nil {
		return nil, nil, err
	}
	return cmd, m.Apply(index, cmd), nil
}
