package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
)

// The cluster id (fsm/clusterid.go) in the data dir. The replicated state
// holds the cluster's id; the data dir keeps a copy, written when this
// node first sees it applied (or restored), so that a node knows which
// cluster its data belongs to before it talks to anyone: membership
// advertises it in gossip, the Raft transport tells it (raftstore's
// identity preamble), and a data dir given a state that names another
// cluster is a hard stop with both ids in the message, never silently
// adopted.

const clusterIDFile = "cluster-id"

// ErrClusterIDMismatch: the data dir belongs to another cluster than the
// replicated state this node holds.
var ErrClusterIDMismatch = errors.New("cluster id mismatch")

// LoadClusterID returns the cluster id recorded in the data dir, "" if
// none yet.
func LoadClusterID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, clusterIDFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if err := fsm.ValidClusterID(id); err != nil {
		return "", fmt.Errorf("%s: cluster id %q: %w; the file is damaged", path, id, err)
	}
	return id, nil
}

// StoreClusterID records id in the data dir: written to a temporary file,
// synced and renamed, so a crash leaves the old file or the new one.
func StoreClusterID(dataDir, id string) error {
	return writeDurably(filepath.Join(dataDir, clusterIDFile), []byte(id+"\n"))
}

// clusterIdentity is this node's record of its cluster id.
type clusterIdentity struct {
	dataDir string
	mu      sync.Mutex
	// recorded is what the data dir holds ("" if nothing yet).
	recorded string
}

// reconcile compares the state's id with the data dir's: it records a new
// one, and reports a different one as ErrClusterIDMismatch naming both.
func (c *clusterIdentity) reconcile(state string) (recordedNow bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case state == "" || state == c.recorded:
		return false, nil
	case c.recorded != "":
		return false, fmt.Errorf("%w: the data dir %s belongs to cluster %s, but the replicated state this node was given names cluster %s: "+
			"this node's data is another cluster's; stop it and give it its own data dir (or a new, empty one to join this cluster)",
			ErrClusterIDMismatch, c.dataDir, c.recorded, state)
	}
	if err := StoreClusterID(c.dataDir, state); err != nil {
		return false, fmt.Errorf("recording cluster id %s in %s: %w", state, c.dataDir, err)
	}
	c.recorded = state
	return true, nil
}

func (c *clusterIdentity) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recorded
}

// stateClusterID is the cluster id of the applied state ("" if none).
func (n *Server) stateClusterID() string {
	var id string
	_ = n.store.ReadLocal(func(m *fsm.Machine) error {
		id = m.ClusterID()
		return nil
	})
	return id
}

// checkClusterID records the state's id in the data dir, or stops on a
// mismatch.
func (n *Server) checkClusterID() error {
	recorded, err := n.clusterID.reconcile(n.stateClusterID())
	if recorded {
		n.log.Info("cluster id recorded in the data dir", "cluster_id", n.clusterID.get(), "data_dir", n.cfg.DataDir)
	}
	return err
}

// watchClusterID keeps the data dir's copy in line with the state, every
// interval, and stops the node on a mismatch (a snapshot or log of
// another cluster reached this node).
func (n *Server) watchClusterID(ctx context.Context, every time.Duration) {
	clock.Every(ctx, serverClock, every, func() bool {
		if err := n.checkClusterID(); err != nil {
			n.serveErr <- err
			return false
		}
		return true
	})
}

// clusterIDRecorder records the cluster id in the data dir as the command
// that sets it applies, not on watchClusterID's next tick. A node killed
// before that tick would restart without it: its raft connections would
// carry no identity, and the peers that did record it would refuse them,
// though they may be the votes it needs to lead (a 3-node cluster could
// then elect no one: integration TestAmnesiacVoterCannotLoseACommittedWrite
// found it). A mismatch is only logged here; watchClusterID stops the node.
type clusterIDRecorder struct {
	id  *clusterIdentity
	log *slog.Logger
}

func (r clusterIDRecorder) Applied(m *fsm.Machine, _ uint64, cmd *fsmpb.Command, res *fsmpb.Result) {
	if cmd.GetSetClusterId() == nil || res == nil || res.Rejection != nil {
		return
	}
	recorded, err := r.id.reconcile(m.ClusterID())
	switch {
	case err != nil:
		r.log.Error("cluster id", "err", err)
	case recorded:
		r.log.Info("cluster id recorded in the data dir", "cluster_id", m.ClusterID(), "data_dir", r.id.dataDir)
	}
}

func (clusterIDRecorder) Restored(uint64) {}

// observers tells several observers of the apply path, in order.
type observers []raftstore.ApplyObserver

func (o observers) Applied(m *fsm.Machine, index uint64, cmd *fsmpb.Command, res *fsmpb.Result) {
	for _, x := range o {
		x.Applied(m, index, cmd, res)
	}
}

func (o observers) Restored(index uint64) {
	for _, x := range o {
		x.Restored(index)
	}
}
