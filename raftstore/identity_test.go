package raftstore

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm/fsmpb"
)

// lockedBuffer collects log lines from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// identityLayer is an identity stream layer on a real loopback listener,
// with recorded as its node's cluster id (which implies level 2).
func identityLayer(t *testing.T, recorded string, logs io.Writer) *identityStreamLayer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	inner := &streamLayer{Listener: ln, advertise: ln.Addr()}
	return newIdentityStreamLayer(inner, &identity{recorded: recorded}, slog.New(slog.NewTextHandler(logs, nil)))
}

// exchange dials from → to, sends payload as raft would (its first byte
// an rpc type), and returns what the acceptor's reader got and its error.
func exchange(t *testing.T, from, to *identityStreamLayer, payload []byte) ([]byte, error) {
	t.Helper()
	type result struct {
		got []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := to.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		buf := make([]byte, len(payload))
		_, err = io.ReadFull(c, buf)
		done <- result{got: buf, err: err}
	}()
	c, err := from.Dial(raft.ServerAddress(to.Addr().String()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(payload); err != nil {
		t.Fatal(err)
	}
	r := <-done
	return r.got, r.err
}

// TestIdentityPreambleOverTCP is the acceptor's table: a preamble naming
// its own id or an id it does not know yet passes, another id is refused
// with a line naming both, and a connection without a preamble passes
// only while the acceptor has no id. The bytes after the preamble reach
// raft unchanged.
func TestIdentityPreambleOverTCP(t *testing.T) {
	payload := []byte{0, 1, 2, 3, 'M', 'D', 'C', 'I'} // rpc type 0 (AppendEntries), then anything
	cases := []struct {
		name         string
		dialer, acc  string
		refused      bool
		logsBothIDs  bool
		logsNoCaller bool
	}{
		{name: "same id", dialer: "aaaa", acc: "aaaa"},
		{name: "acceptor without id (a server being added)", dialer: "aaaa", acc: ""},
		{name: "neither has an id (level 1)", dialer: "", acc: ""},
		{name: "another cluster", dialer: "bbbb", acc: "aaaa", refused: true, logsBothIDs: true},
		{name: "no preamble at level 2", dialer: "", acc: "aaaa", refused: true, logsNoCaller: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			from := identityLayer(t, tc.dialer, io.Discard)
			to := identityLayer(t, tc.acc, &logs)
			got, err := exchange(t, from, to, payload)
			if tc.refused {
				if err == nil {
					t.Fatalf("accepted: read %v", got)
				}
			} else if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("read %v, %v; want %v", got, err, payload)
			}
			line := logs.String()
			if tc.logsBothIDs && !(strings.Contains(line, tc.dialer) && strings.Contains(line, tc.acc)) {
				t.Errorf("refusal log does not name both ids: %q", line)
			}
			if tc.logsNoCaller && !strings.Contains(line, "without a cluster id") {
				t.Errorf("refusal log: %q", line)
			}
			if !tc.refused && line != "" {
				t.Errorf("unexpected log: %q", line)
			}
		})
	}
}

// TestPlainDialBelowLevel2: a node that knows an id only from its state
// but whose state is below level 2 sends no preamble (a 0.1.0 server may
// be on the other end), so raft's wire is unchanged.
func TestPlainDialBelowLevel2(t *testing.T) {
	id := &identity{}
	a := newFSMAdapter(slog.New(slog.DiscardHandler))
	id.adapter.Store(a)
	if got, level2 := id.current(); got != "" || level2 {
		t.Fatalf("fresh state: id %q level2 %v", got, level2)
	}
	s := "cccc"
	a.clusterID.Store(&s) // cannot happen at level 1; shows level gates the preamble
	if _, level2 := id.current(); level2 {
		t.Fatal("level 1 state counted as level 2")
	}
	ln := identityLayer(t, "", io.Discard)
	from := newIdentityStreamLayer(ln.StreamLayer, id, slog.New(slog.DiscardHandler))
	to := identityLayer(t, "", io.Discard)
	got, err := exchange(t, from, to, []byte{1, 2, 3})
	if err != nil || !bytes.Equal(got, []byte{1, 2, 3}) {
		t.Fatalf("read %v, %v", got, err)
	}
}

func setClusterID(id string) *fsmpb.Command {
	return &fsmpb.Command{RequestId: "cid-" + id, Op: &fsmpb.Command_SetClusterId{SetClusterId: &fsmpb.SetClusterID{ClusterId: id}}}
}

// TestForeignLeaderCannotReplicate runs two one-node clusters over the
// real TCP transport, each at level 2 with its own cluster id, and makes
// one's leader add the other's server: its AppendEntries are refused at
// the connection, the other server's log and leadership stay its own.
func TestForeignLeaderCannotReplicate(t *testing.T) {
	var logs lockedBuffer
	open1 := func(id string) *Store {
		cfg := testConfig(id, t.TempDir())
		s, err := Open(cfg, nil, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Bootstrap([]Server{{ID: id, Address: s.Addr()}}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open1("n1"), open1("n2")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for s, cid := range map[*Store]string{a: "aaaa1111", b: "bbbb2222"} {
		if _, _, err := s.AwaitLeadership(ctx); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []*fsmpb.Command{setLevel(2), setClusterID(cid)} {
			if res, err := s.Propose(ctx, cmd); err != nil || res.Rejection != nil {
				t.Fatalf("%s: %v %v", s.ID(), err, res)
			}
		}
		if s.ClusterID() != cid {
			t.Fatalf("%s: cluster id %q", s.ID(), s.ClusterID())
		}
	}
	bIndex := b.AppliedIndex()
	// The add itself commits on a's own quorum (a alone); b never accepts
	// a connection from it.
	if _, err := a.AddNonvoter(ctx, "n2", b.Addr()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a refusal logged", func() bool { return strings.Contains(logs.String(), "refusing a server of another cluster") })
	line := logs.String()
	if !strings.Contains(line, "aaaa1111") || !strings.Contains(line, "bbbb2222") {
		t.Errorf("refusal does not name both ids:\n%s", line)
	}
	if !b.IsLeader() || b.ClusterID() != "bbbb2222" || b.AppliedIndex() != bIndex {
		t.Fatalf("b changed: leader %v, id %q, applied %d (was %d)", b.IsLeader(), b.ClusterID(), b.AppliedIndex(), bIndex)
	}
	servers, err := b.Configuration()
	if err != nil || len(servers) != 1 || servers[0].ID != "n2" {
		t.Fatalf("b's configuration %v, %v", servers, err)
	}
}
