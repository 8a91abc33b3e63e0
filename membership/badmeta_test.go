package membership

import (
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// rawDelegate advertises fixed metadata bytes.
type rawDelegate struct{ meta []byte }

func (d rawDelegate) NodeMeta(int) []byte                 { return d.meta }
func (d rawDelegate) NotifyMsg([]byte)                    {}
func (d rawDelegate) GetBroadcasts(int, int) [][]byte     { return nil }
func (d rawDelegate) LocalState(bool) []byte              { return nil }
func (d rawDelegate) MergeRemoteState(buf []byte, _ bool) {}

// rogue starts a bare memberlist node named name advertising meta.
func rogue(t *testing.T, name string, meta []byte) (*memberlist.Memberlist, string) {
	t.Helper()
	conf := memberlist.DefaultLocalConfig()
	conf.Name = name
	conf.BindAddr = "127.0.0.1"
	conf.BindPort = 0
	conf.AdvertisePort = 0
	conf.Delegate = rawDelegate{meta: meta}
	conf.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ml.Shutdown() })
	n := ml.LocalNode()
	return ml, net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// TestBadMetadataIgnored: peers with undecodable metadata or an invalid
// name are gossip members to memberlist but not to the agents: they are
// not listed, not counted for bootstrap (expect 2 with 2 rogues alive
// would otherwise see 4 servers and refuse), and not added to raft.
func TestBadMetadataIgnored(t *testing.T) {
	good, _ := EncodeMeta(Meta{RaftAddr: "r.raft:1", GRPCAddr: "r.grpc:1", Expect: 2})
	garbage := append([]byte{MetaVersion}, []byte("not metadata at all")...)
	_, hub := rogue(t, "rogue", garbage)
	badName, _ := rogue(t, "bad name!", good)
	if _, err := badName.Join([]string{hub}); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t)
	c.start("n1", 2, []string{hub}, nil)
	c.start("n2", 2, []string{hub}, nil)
	waitFor(t, 10*time.Second, "agents see the rogues in memberlist", func() error {
		for _, id := range []string{"n1", "n2"} {
			if n := c.node(id).agent.ml.NumMembers(); n != 4 {
				return fmt.Errorf("%s: memberlist has %d alive", id, n)
			}
		}
		return nil
	})
	c.wantConfig(voters("n1", "n2"))
	for _, id := range []string{"n1", "n2"} {
		ms := c.node(id).agent.Members()
		if len(ms) != 2 || ms[0].ID != "n1" || ms[1].ID != "n2" {
			t.Errorf("%s lists %+v", id, ms)
		}
		if _, ok := c.node(id).agent.Lookup("rogue"); ok {
			t.Errorf("%s: Lookup found the rogue", id)
		}
	}
	for _, who := range []string{"name=rogue", `name="bad name!"`} {
		if n := c.sink.count("ignoring gossip member with invalid name or metadata", "node=n1", who); n != 1 {
			t.Errorf("n1 logged %s %d times, want once", who, n)
		}
	}
	for _, id := range []string{"n1", "n2"} {
		waitRounds(t, c.node(id).agent, 5) // a few more reconcile rounds
	}
	c.wantConfig(voters("n1", "n2"))
}
