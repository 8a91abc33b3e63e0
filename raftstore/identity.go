package raftstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm"
)

// The Raft transport's cluster identity check (README "Cluster identity"). A node must
// not take AppendEntries, RequestVote or InstallSnapshot from another
// cluster's servers: node ids like n1 repeat across clusters, and a
// foreign leader's entries would overwrite this node's log.
//
// The dialler of a connection writes a preamble before raft's first RPC
// when it knows its cluster id and its state is at feature level 2 or
// more — so no release-0.1.0 server, which knows no preamble, can be on
// the other end (the level is raised only once every server applies it):
//
//	"MDCI"  4 magic bytes; 'M' is 0x4d, never one of hashicorp/raft's
//	        rpc type bytes (0..4), which start a connection without one
//	1       preamble version
//	n       length of the id (1..fsm.MaxClusterIDLen), then the id
//
// The acceptor peeks at the first byte (in raft's per-connection
// goroutine, never in the accept loop). A preamble naming another id than
// this node's closes the connection, with a log line naming both ids; an
// id this node does not know yet (a new server being added) is accepted.
// A connection without a preamble is accepted only while this node has no
// cluster id or its state is below level 2: a level-2 cluster's servers
// all send one, so a plain connection then comes from a server of a
// level-1 cluster (another cluster) or from no metad at all.
//
// A narrow window remains: when a leader fails right after SetClusterID
// commits, servers that applied it refuse plain connections from those
// that have it in their log but have not applied it yet. Either side that
// holds a voter majority still elects a leader (the side without the id
// applies it once its leader commits, and then names it), so an odd number
// of voters always makes progress; an even split could wait until a
// server restarts.
//
// Without TLS this identifies, it does not authenticate: anyone who can
// reach the Raft port and learns the id can still talk to it, as the
// README says for the insecure mode. With TLS the preamble travels inside
// the mutual-TLS connection.

// preambleMagic starts an identity preamble.
var preambleMagic = []byte("MDCI")

const preambleVersion = 1

// errForeignCluster closes a connection from another cluster's server.
var errForeignCluster = errors.New("raftstore: connection from another cluster")

// identity is what this node knows about its cluster: the id its data dir
// recorded (Config.ClusterID) and the applied state's id and level.
type identity struct {
	recorded string
	adapter  atomic.Pointer[fsmAdapter] // set once raft's state machine exists
}

// current returns this node's cluster id ("" if unknown) and whether its
// state is at feature level 2 or more. An id recorded in the data dir
// implies level 2: the id only exists from level 2, and levels never go
// down.
func (i *identity) current() (string, bool) {
	id, level2 := i.recorded, i.recorded != ""
	if a := i.adapter.Load(); a != nil {
		if p := a.clusterID.Load(); p != nil && *p != "" {
			id = *p
		}
		level2 = level2 || a.level.Load() >= 2
	}
	return id, level2
}

// identityStreamLayer adds the preamble to dialled connections and checks
// it on accepted ones.
type identityStreamLayer struct {
	raft.StreamLayer
	id     *identity
	logger *slog.Logger
	// refusals rate-limits the refusal log: one line per id pair a minute.
	mu       sync.Mutex
	refusals map[string]time.Time
}

func newIdentityStreamLayer(inner raft.StreamLayer, id *identity, logger *slog.Logger) *identityStreamLayer {
	return &identityStreamLayer{StreamLayer: inner, id: id, logger: logger, refusals: map[string]time.Time{}}
}

// Dial connects and, when this node's identity may be told (see above),
// writes the preamble within timeout.
func (l *identityStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := l.StreamLayer.Dial(address, timeout)
	if err != nil {
		return nil, err
	}
	id, level2 := l.id.current()
	if id == "" || !level2 {
		return c, nil
	}
	_ = c.SetWriteDeadline(wall.Now().Add(timeout))
	if _, err := c.Write(encodePreamble(id)); err != nil {
		c.Close()
		return nil, fmt.Errorf("raftstore: identity preamble to %s: %w", address, err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// Accept returns the next connection; its first Read checks the preamble.
func (l *identityStreamLayer) Accept() (net.Conn, error) {
	c, err := l.StreamLayer.Accept()
	if err != nil {
		return nil, err
	}
	return &checkedConn{Conn: c, r: bufio.NewReader(c), check: l.check}, nil
}

// check reads the preamble, if any, from r and decides. It returns io.EOF
// to refuse: raft then closes the connection without logging a decode
// error, and the refusal's own line says why.
func (l *identityStreamLayer) check(r *bufio.Reader, remote net.Addr) error {
	first, err := r.Peek(1)
	if err != nil {
		return err
	}
	own, level2 := l.id.current()
	if first[0] != preambleMagic[0] {
		if own != "" && level2 {
			l.refuse(remote, own, "", "a connection without a cluster id (a server of a cluster at feature level 1, or not metad)")
			return io.EOF
		}
		return nil
	}
	theirs, err := readPreamble(r)
	if err != nil {
		l.logger.Warn("raft transport: refusing a connection with a bad identity preamble", "remote", remote.String(), "err", err)
		return io.EOF
	}
	if own != "" && theirs != own {
		l.refuse(remote, own, theirs, "a server of another cluster")
		return io.EOF
	}
	return nil
}

func (l *identityStreamLayer) refuse(remote net.Addr, own, theirs, what string) {
	key := own + "/" + theirs
	now := wall.Now()
	l.mu.Lock()
	last, seen := l.refusals[key]
	quiet := seen && now.Sub(last) < time.Minute
	if !quiet {
		l.refusals[key] = now
	}
	l.mu.Unlock()
	if quiet {
		return
	}
	l.logger.Warn(fmt.Sprintf("raft transport: refusing %s: this node's cluster id is %s, the caller's is %q", what, own, theirs),
		"remote", remote.String(), "cluster_id", own, "remote_cluster_id", theirs, "err", errForeignCluster)
}

func encodePreamble(id string) []byte {
	b := make([]byte, 0, len(preambleMagic)+2+len(id))
	b = append(b, preambleMagic...)
	b = append(b, preambleVersion, byte(len(id)))
	return append(b, id...)
}

// readPreamble reads a whole preamble from r.
func readPreamble(r io.Reader) (string, error) {
	var head [6]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return "", err
	}
	if !bytes.Equal(head[:4], preambleMagic) {
		return "", fmt.Errorf("magic %q", head[:4])
	}
	if head[4] != preambleVersion {
		return "", fmt.Errorf("preamble version %d, this build reads %d", head[4], preambleVersion)
	}
	id := make([]byte, head[5])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", err
	}
	if err := fsm.ValidClusterID(string(id)); err != nil {
		return "", fmt.Errorf("cluster id: %w", err)
	}
	return string(id), nil
}

// checkedConn runs check once, before the first read, then reads through
// the buffered reader check peeked with.
type checkedConn struct {
	net.Conn
	r     *bufio.Reader
	check func(*bufio.Reader, net.Addr) error
	done  bool
	err   error
}

func (c *checkedConn) Read(p []byte) (int, error) {
	if !c.done {
		c.done = true
		c.err = c.check(c.r, c.Conn.RemoteAddr())
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.r.Read(p)
}
