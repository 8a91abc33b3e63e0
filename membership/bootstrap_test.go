package membership

import (
	"fmt"
	"strings"
	"testing"
)

// mem builds a member for tables: id, status, expect, bootstrapped; raft
// address derived from the id.
func mem(id string, st Status, expect int, bootstrapped bool) Member {
	return Member{ID: id, GossipAddr: "127.0.0.1:1", Status: st, Meta: Meta{
		Version: MetaVersion, RaftAddr: "raft-" + id + ":1", GRPCAddr: "grpc-" + id + ":1",
		Expect: expect, Bootstrapped: bootstrapped}}
}

func TestDecideBootstrap(t *testing.T) {
	A, D, L := StatusAlive, StatusDead, StatusLeft
	cases := []struct {
		name     string
		members  []Member
		verdict  bootstrapVerdict
		conflict bool
		servers  string // ids of the configuration, for bootstrapNow
		reason   string // substring of the reason
	}{
		{"alone", []Member{mem("a", A, 3, false)}, bootstrapWait, false, "", "waiting for 2 more"},
		{"self not seen", []Member{mem("b", A, 3, false), mem("c", A, 3, false)}, bootstrapWait, false, "", "own gossip entry"},
		{"exactly three, sorted", []Member{mem("c", A, 3, false), mem("a", A, 3, false), mem("b", A, 3, false)},
			bootstrapNow, false, "a,b,c", "bootstrapping"},
		{"dead ones do not count", []Member{mem("a", A, 3, false), mem("b", A, 3, false), mem("c", D, 3, false), mem("d", L, 3, false)},
			bootstrapWait, false, "", "waiting for 1 more"},
		{"dead extra is ignored", []Member{mem("a", A, 3, false), mem("b", A, 3, false), mem("c", A, 3, false), mem("d", D, 3, false)},
			bootstrapNow, false, "a,b,c", ""},
		{"peer bootstrapped", []Member{mem("a", A, 3, false), mem("b", A, 3, true)}, bootstrapNever, false, "", "already belongs"},
		{"dead bootstrapped peer does not count", []Member{mem("a", A, 3, false), mem("b", D, 3, true), mem("c", A, 3, false), mem("d", A, 3, false)},
			bootstrapNow, false, "a,c,d", ""},
		{"more than expected", []Member{mem("a", A, 3, false), mem("b", A, 3, false), mem("c", A, 3, false), mem("d", A, 3, false)},
			bootstrapWait, true, "", "refusing to guess"},
		{"expect mismatch", []Member{mem("a", A, 3, false), mem("b", A, 5, false), mem("c", A, 3, false)},
			bootstrapWait, true, "", "b expects 5"},
		{"joiner without expect", []Member{mem("a", A, 3, false), mem("b", A, 3, false), mem("j", A, 0, false)},
			bootstrapWait, true, "", "j expects 0"},
		{"single node", []Member{mem("a", A, 1, false)}, bootstrapNow, false, "a", ""},
		{"duplicate raft address", []Member{mem("a", A, 2, false), func() Member { m := mem("b", A, 2, false); m.Meta.RaftAddr = "raft-a:1"; return m }()},
			bootstrapWait, true, "", "both advertise"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect := 3
			if c.name == "single node" {
				expect = 1
			} else if c.name == "duplicate raft address" {
				expect = 2
			}
			d := decideBootstrap("a", expect, c.members)
			if d.Verdict != c.verdict || d.Conflict != c.conflict {
				t.Fatalf("got verdict %v conflict %v (%s), want %v %v", d.Verdict, d.Conflict, d.Reason, c.verdict, c.conflict)
			}
			if !strings.Contains(d.Reason, c.reason) {
				t.Errorf("reason %q lacks %q", d.Reason, c.reason)
			}
			if c.verdict != bootstrapNow {
				if d.Servers != nil {
					t.Errorf("servers %v on a non-bootstrap verdict", d.Servers)
				}
				return
			}
			var ids []string
			for _, s := range d.Servers {
				ids = append(ids, s.ID)
				if !s.Voter || s.Address != "raft-"+s.ID+":1" {
					t.Errorf("server %+v: want a voter at its advertised raft address", s)
				}
			}
			if strings.Join(ids, ",") != c.servers {
				t.Errorf("servers %v, want %s", ids, c.servers)
			}
		})
	}
}

// TestDecideBootstrapSameEverywhere: every one of the n nodes, given the
// same view in any order, bootstraps the identical configuration.
func TestDecideBootstrapSameEverywhere(t *testing.T) {
	view := []Member{mem("n3", StatusAlive, 5, false), mem("n1", StatusAlive, 5, false), mem("n5", StatusAlive, 5, false),
		mem("n2", StatusAlive, 5, false), mem("n4", StatusAlive, 5, false)}
	var first string
	for i := range view {
		rot := append(append([]Member(nil), view[i:]...), view[:i]...)
		d := decideBootstrap(view[i].ID, 5, rot)
		if d.Verdict != bootstrapNow {
			t.Fatalf("%s: %v %s", view[i].ID, d.Verdict, d.Reason)
		}
		got := fmt.Sprint(d.Servers)
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("%s bootstraps %s, another %s", view[i].ID, got, first)
		}
	}
}
