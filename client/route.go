package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/clock"
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
	leader   *leaderConn // nil while unknown
	lookedAt time.Time   // last discovery attempt
	looking  bool        // a discovery is running
	closed   bool
	bg       sync.WaitGroup // discoveries in flight
}

// rediscoverAfter bounds how often a client asks who leads.
const rediscoverAfter = 500 * time.Millisecond

// leaderConn is a connection to the leader, shared by the calls routed to
// it. Invariant: it is closed once it is forgotten (the leader moved) and
// no call or stream that picked it is still running, so forgetting it
// never cuts off the other calls in flight on it ("the client connection
// is closing").
type leaderConn struct {
	conn      *grpc.ClientConn
	users     int  // calls and streams running on conn; guarded by leaderRouter.mu
	forgotten bool // no new call picks it; guarded by leaderRouter.mu
}

// pick returns the connection for one call: the leader's, held until
// release, or, while the leader is unknown, any member's (release nil).
func (r *leaderRouter) pick() (grpc.ClientConnInterface, *leaderConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leader != nil {
		r.leader.users++
		return r.leader.conn, r.leader
	}
	if !r.looking && !r.closed && clock.Since(wall, r.lookedAt) > rediscoverAfter {
		r.looking, r.lookedAt = true, wall.Now()
		r.bg.Add(1)
		go r.discover()
	}
	return r.any, nil
}

// release ends one use of lc, closing it if it was the last use of a
// forgotten connection.
func (r *leaderRouter) release(lc *leaderConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lc.users--
	if lc.forgotten && lc.users == 0 {
		lc.conn.Close()
	}
}

// Invoke implements grpc.ClientConnInterface.
func (r *leaderRouter) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	conn, lc := r.pick()
	err := conn.Invoke(ctx, method, args, reply, opts...)
	if lc != nil {
		if err != nil && leaderMoved(err) {
			r.forget(lc)
		}
		r.release(lc)
	}
	return err
}

// NewStream implements grpc.ClientConnInterface. A stream on the leader's
// connection holds it until the stream ends (an error or io.EOF from
// RecvMsg) or its context does.
func (r *leaderRouter) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	conn, lc := r.pick()
	st, err := conn.NewStream(ctx, desc, method, opts...)
	if lc == nil {
		return st, err
	}
	var once sync.Once
	done := func() { once.Do(func() { r.release(lc) }) }
	if err != nil {
		done()
		return nil, err
	}
	context.AfterFunc(ctx, done)
	return &heldStream{ClientStream: st, done: done}, nil
}

// heldStream releases its connection when the stream ends.
type heldStream struct {
	grpc.ClientStream
	done func()
}

func (s *heldStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.done()
	}
	return err
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

// forget stops routing to lc (the leader moved); the next call
// rediscovers. lc closes once its last call ends (release).
func (r *leaderRouter) forget(lc *leaderConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(lc)
}

func (r *leaderRouter) forgetLocked(lc *leaderConn) {
	if lc == nil || lc.forgotten {
		return
	}
	lc.forgotten = true
	if r.leader == lc {
		r.leader = nil
	}
	if lc.users == 0 {
		lc.conn.Close()
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
	r.leader = &leaderConn{conn: conn}
}

// close stops discovery and closes the leader connection.
func (r *leaderRouter) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.bg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(r.leader)
}
