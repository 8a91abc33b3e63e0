package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
)

// leaderRouter sends calls to the cluster's leader when it knows it, and
// to any member (round robin) otherwise. Any member can serve any call, so
// routing is only about cost: a follower forwards writes to the leader and
// asks it for a read index before every linearizable read, one or two
// extra round trips that the leader answers itself. It implements
// grpc.ClientConnInterface, so the generated stubs use it unchanged.
type leaderRouter struct {
	any   *grpc.ClientConn  // round robin over the configured members
	creds []grpc.DialOption // the client's TLS and token, for the leader's conn

	// mu guards the fields below.
	mu       sync.Mutex
	leader   *grpc.ClientConn // nil while unknown
	lookedAt time.Time        // last discovery attempt
	looking  bool             // a discovery is running
	closed   bool
	bg       sync.WaitGroup // discoveries in flight
}

// rediscoverAfter bounds how often a client asks who leads.
const rediscoverAfter = 500 * time.Millisecond

func (r *leaderRouter) pick() (grpc.ClientConnInterface, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leader != nil {
		return r.leader, true
	}
	if !r.looking && !r.closed && time.Since(r.lookedAt) > rediscoverAfter {
		r.looking, r.lookedAt = true, time.Now()
		r.bg.Add(1)
		go r.discover()
	}
	return r.any, false
}

// Invoke implements grpc.ClientConnInterface.
func (r *leaderRouter) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	conn, toLeader := r.pick()
	err := conn.Invoke(ctx, method, args, reply, opts...)
	if err != nil && toLeader && leaderMoved(err) {
		r.forget()
	}
	return err
}

// NewStream implements grpc.ClientConnInterface.
func (r *leaderRouter) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	conn, _ := r.pick()
	return conn.NewStream(ctx, desc, method, opts...)
}

// leaderMoved reports errors after which the routed-to node may no longer
// lead: it refused as a follower, or it could not be reached (a paused or
// partitioned leader answers nothing, so a deadline counts too).
func leaderMoved(err error) bool {
	err = fromStatus(err)
	if _, ok := AsError(err); !ok {
		return true
	}
	for _, moved := range []error{ErrNotLeader, ErrNoLeader, ErrNotReady, ErrLeadershipLost, ErrShuttingDown, ErrDeadlineExceeded} {
		if errors.Is(err, moved) {
			return true
		}
	}
	return Reason(err) == ReasonUnavailable
}

// forget drops the leader connection; the next call rediscovers.
func (r *leaderRouter) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leader != nil {
		r.leader.Close()
		r.leader = nil
	}
}

// discover asks any member who leads and dials it.
func (r *leaderRouter) discover() {
	defer r.bg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addr := ""
	if st, err := metadpb.NewClusterClient(r.any).Status(ctx, &metadpb.StatusRequest{}); err == nil {
		for _, n := range st.Nodes {
			if n.NodeId == st.LeaderId && n.State == "Leader" {
				addr = n.GrpcAddr
			}
		}
	}
	var conn *grpc.ClientConn
	if addr != "" {
		conn, _ = grpc.NewClient("passthrough:///"+addr, r.creds...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.looking = false
	if conn == nil {
		return
	}
	if r.closed || r.leader != nil {
		conn.Close()
		return
	}
	r.leader = conn
}

// close stops discovery and closes the leader connection.
func (r *leaderRouter) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.bg.Wait()
	r.forget()
}
