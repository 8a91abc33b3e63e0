package membership

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestLeaveMessageMakesALeave: gossip may deliver a node's leave before
// the metadata that marks it leaving (the flake of
// TestReconcileRemovesDeadWithinQuorum: d was seen dead, not left). The
// direct leave message settles it, whichever arrives first, and a node
// that comes back and later fails is dead again.
func TestLeaveMessageMakesALeave(t *testing.T) {
	now := t0
	tb := newTable(slog.New(slog.DiscardHandler), func() time.Time { return now }, func() {})
	meta, err := EncodeMeta(Meta{RaftAddr: "10.0.0.4:7421", GRPCAddr: "10.0.0.4:7420", Bootstrapped: true})
	if err != nil {
		t.Fatal(err)
	}
	node := &memberlist.Node{Name: "d", Addr: net.ParseIP("10.0.0.4"), Port: 7422, Meta: meta}
	status := func() Status {
		m, _ := tb.lookup("d")
		return m.Status
	}

	tb.NotifyJoin(node)
	tb.noteMessage([]byte(leaveMsgPrefix + "d")) // message first
	tb.NotifyLeave(node)                         // then the leave, old metadata
	if got := status(); got != StatusLeft {
		t.Fatalf("message then leave: %v, want left", got)
	}

	now = now.Add(time.Minute)
	tb.NotifyJoin(node) // back
	if got := status(); got != StatusAlive {
		t.Fatalf("back: %v, want alive", got)
	}
	tb.NotifyLeave(node) // a failure this time: no message
	if got := status(); got != StatusDead {
		t.Fatalf("failure after coming back: %v, want dead", got)
	}
	tb.noteMessage([]byte(leaveMsgPrefix + "d")) // a late message turns it into a leave
	if got := status(); got != StatusLeft {
		t.Fatalf("leave then message: %v, want left", got)
	}
	tb.noteMessage([]byte("something else"))
	tb.noteMessage([]byte(leaveMsgPrefix + "bad id!"))
	if err := tb.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}
