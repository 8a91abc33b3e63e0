package peer

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/repair"
)

// Config bounds the node-to-node questions this node asks.
type Config struct {
	// StatusTimeout bounds a peer's answer to a status question without
	// the state hash (Cluster.Status, the level raise). Default 2s; range
	// [100ms, 1m].
	StatusTimeout time.Duration
	// IncarnationTimeout bounds how long Members waits for the members it
	// asks for their incarnation, and remove-peer for the removed
	// server's. Default 1s; range [100ms, 1m].
	IncarnationTimeout time.Duration
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{StatusTimeout: 2 * time.Second, IncarnationTimeout: time.Second}
}

// Validate reports every out-of-range setting.
func (c Config) Validate() error {
	var errs []error
	if c.StatusTimeout < 100*time.Millisecond || c.StatusTimeout > time.Minute {
		errs = append(errs, fmt.Errorf("peer: StatusTimeout %s outside [100ms, 1m]", c.StatusTimeout))
	}
	if c.IncarnationTimeout < 100*time.Millisecond || c.IncarnationTimeout > time.Minute {
		errs = append(errs, fmt.Errorf("peer: IncarnationTimeout %s outside [100ms, 1m]", c.IncarnationTimeout))
	}
	return errors.Join(errs...)
}

// Deps are the node's collaborators.
type Deps struct {
	// Store is this node's Raft store. Required.
	Store *raftstore.Store
	// Repair is this node's repair loop, which serves the Peer service's
	// Repair while this node leads. Required.
	Repair *repair.Service
	// Client reaches the other nodes. Required.
	Client *Client
	// Logger is required.
	Logger *slog.Logger
	// ToStatus maps a failure of the layers below to the gRPC status the
	// Peer service answers with. node sets it to api.ToStatus: api owns
	// the error table, and peer does not import api. Required.
	ToStatus func(error) error
	// Removals, optional, makes remove-peer's removals stick
	// (tombstones.go).
	Removals Removals
	// Incarnation is this node's incarnation id, reported in LocalStatus.
	Incarnation string
}

// Node is this node's side of the node-to-node work: the Peer service's
// server, proposals forwarded to the leader, status fan-out, the feature
// level raise, the cluster id and the tombstone policy.
type Node struct {
	cfg         Config
	store       *raftstore.Store
	repair      *repair.Service
	client      *Client
	log         *slog.Logger
	toStatus    func(error) error
	removals    Removals
	incarnation string
	// ownClusterID is the store's ClusterID (a field so that the
	// interceptor's tests need no store).
	ownClusterID func() string
	// foreign remembers the other clusters' callers refused (clusterid.go).
	foreign foreignCallers
}

// New returns a Node.
func New(cfg Config, deps Deps) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil || deps.Repair == nil || deps.Client == nil || deps.Logger == nil || deps.ToStatus == nil {
		return nil, errors.New("peer: Store, Repair, Client, Logger and ToStatus are required")
	}
	n := &Node{
		cfg: cfg, store: deps.Store, repair: deps.Repair, client: deps.Client, log: deps.Logger,
		toStatus: deps.ToStatus, removals: deps.Removals, incarnation: deps.Incarnation,
		ownClusterID: deps.Store.ClusterID,
	}
	if n.removals == nil {
		n.removals = noRemovals{}
	}
	return n, nil
}

// Client is the client this node reaches the others with.
func (n *Node) Client() *Client { return n.client }

// Register registers the Peer service on g.
func (n *Node) Register(g grpc.ServiceRegistrar) {
	metadpb.RegisterPeerServer(g, &service{n: n})
}

// LeaderConn returns a connection to the current leader, for the Cluster calls
// only the leader serves.
func (n *Node) LeaderConn() (*grpc.ClientConn, error) {
	id, _ := n.store.Leader()
	if id == "" {
		return nil, raftstore.ErrNoLeader
	}
	c, err := n.client.Conn(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
	}
	return c, nil
}

// fanOut runs f for every index in [0, count) at once and waits for all.
func fanOut(count int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}
