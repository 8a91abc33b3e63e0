package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"
)

// TestMembersShowsEveryIncarnation: `metad members` on a follower, right
// after the cluster formed, lists every member's incarnation (the one in
// its data dir). Only a leader learns incarnations, in its reconcile
// probes, so a follower listed "-" for every peer.
func TestMembersShowsEveryIncarnation(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	c.WaitFormed(3)
	follower := (c.WaitLeader(0) + 1) % len(c.Nodes)
	want := map[string]string{}
	for _, nd := range c.Nodes {
		b, err := os.ReadFile(filepath.Join(nd.DataDir, "incarnation"))
		if err != nil {
			t.Fatal(err)
		}
		want[nd.ID] = strings.TrimSpace(string(b))
	}
	s := &realServer{c: c, bin: proc.Binary(t), addr: c.Nodes[follower].GRPC}
	var resp metadpb.MembersResponse
	c.WaitFor("the follower's gossip view to hold every member alive", 30*time.Second, func() bool {
		out, code := s.run(t, "members", "-o", "json")
		if code != 0 {
			t.Fatalf("members: exit %d\n%s", code, out)
		}
		unmarshalProto(t, out, &resp)
		alive := 0
		for _, m := range resp.Members {
			if m.Status == "alive" {
				alive++
			}
		}
		return alive == len(c.Nodes)
	})
	for _, m := range resp.Members {
		if m.Incarnation != want[m.NodeId] {
			t.Errorf("%s's incarnation as %s lists it: %q, want %q", m.NodeId, c.Nodes[follower].ID, m.Incarnation, want[m.NodeId])
		}
	}
	out, _ := s.run(t, "members")
	if strings.Contains(out, " -\n") {
		t.Errorf("the table lists a member without its incarnation:\n%s", out)
	}
}

// TestRaftAdvertiseKeepsTheHostName: --raft-advertise localhost:PORT is
// what the Raft configuration holds, live and in the data dir, not the
// address it resolves to: a stable DNS name (a Kubernetes pod's) must
// outlive the address behind it.
func TestRaftAdvertiseKeepsTheHostName(t *testing.T) {
	c := proc.New(t, 1)
	_, port, err := net.SplitHostPort(c.Nodes[0].Raft)
	if err != nil {
		t.Fatal(err)
	}
	advertised := "localhost:" + port
	c.Nodes[0].Args = append(c.Nodes[0].Args, "--raft-advertise", advertised)
	c.StartAll()
	c.WaitFor("a leader", 60*time.Second, func() bool { return c.Leader(0) == 0 })
	s := &realServer{c: c, bin: proc.Binary(t), addr: c.Nodes[0].GRPC}
	out, code := s.run(t, "raft", "list-peers", "-o", "json")
	if code != 0 {
		t.Fatalf("raft list-peers: exit %d\n%s", code, out)
	}
	var st metadpb.StatusResponse
	unmarshalProto(t, out, &st)
	if len(st.Nodes) != 1 || st.Nodes[0].RaftAddr != advertised {
		t.Errorf("the live configuration: %v, want the one server at %s", st.Nodes, advertised)
	}
	c.Stop(0)
	out, code = s.run(t, "data", "inspect", "--data-dir", c.Nodes[0].DataDir, "-o", "json")
	if code != 0 {
		t.Fatalf("data inspect: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, `"address": "`+advertised+`"`) {
		t.Errorf("the data dir's configuration does not hold %s:\n%s", advertised, out)
	}
}
