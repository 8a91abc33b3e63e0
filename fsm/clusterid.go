package fsm

import (
	"fmt"

	"github.com/metad/metad/fsm/fsmpb"
)

// The cluster id names one cluster for its whole life (README "Cluster identity"): the
// first leader at feature level 2 proposes a random one (SetClusterID),
// every node records it in its data dir, and nodes use it to refuse a node
// of another cluster (membership, the Raft transport, the Peer service).
// It is set once: a different id later is refused, so replicas and replays
// never disagree on it. Before level 2 the state has none, and a level-1
// snapshot stays byte-identical (the field is empty, not written).

// clusterIDLevel is the feature level that introduced the cluster id.
const clusterIDLevel uint32 = 2

// MaxClusterIDLen bounds a cluster id (a 128-bit hex id is 32 bytes).
const MaxClusterIDLen = 64

// ClusterID is the cluster's id, "" until SetClusterID applied.
func (m *Machine) ClusterID() string { return m.clusterID }

func (m *Machine) setClusterID(index uint64, c *fsmpb.SetClusterID) *fsmpb.Result {
	if m.Level() < clusterIDLevel {
		return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "", "the cluster id needs feature level %d; the cluster is at %d", clusterIDLevel, m.Level())
	}
	if m.clusterID != "" && m.clusterID != c.ClusterId {
		return reject(index, fsmpb.RejectCode_CONDITION_FAILED, "cluster_id", "the cluster id is %s already; it never changes", m.clusterID)
	}
	m.clusterID = c.ClusterId
	return &fsmpb.Result{Version: index}
}

// ValidClusterID reports what is wrong with a cluster id: it must be 1..64
// printable ASCII bytes without spaces (it goes into logs, file names'
// contents, gRPC metadata and gossip metadata).
func ValidClusterID(id string) error {
	if id == "" || len(id) > MaxClusterIDLen {
		return fmt.Errorf("length %d, want 1..%d", len(id), MaxClusterIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return fmt.Errorf("byte %d is %#x, want printable ASCII without spaces", i, id[i])
		}
	}
	return nil
}

// checkClusterID is the cluster id's invariant: none below the level that
// introduced it, and a valid one otherwise.
func (m *Machine) checkClusterID() error {
	if m.clusterID == "" {
		return nil
	}
	if m.Level() < clusterIDLevel {
		return fmt.Errorf("cluster id %q at feature level %d", m.clusterID, m.Level())
	}
	if err := ValidClusterID(m.clusterID); err != nil {
		return fmt.Errorf("cluster id %q: %w", m.clusterID, err)
	}
	return nil
}

// ForgetIdentity makes the state the seed of a new cluster: it clears the
// cluster id and every tombstone. `metad snapshot restore` does it unless
// told to keep the source's identity (disaster recovery of the same
// cluster): a copy that kept the id could be mistaken for the source, and
// its tombstones name servers of another cluster's history. The new
// cluster's first leader gives it a fresh id (peer.Node.EnsureClusterID).
// Every server restoring one file does the same to the same state, so the
// replicas agree; the applied index is unchanged.
func (m *Machine) ForgetIdentity() {
	m.clusterID = ""
	clear(m.tombstones)
}
