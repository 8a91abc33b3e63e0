// Package integration runs real metad processes (issue "A running
// cluster"): cluster formation in any order, writes through followers,
// linearizable reads everywhere, kill -9 of the leader, restarts, dead
// server removal, and the paused-leader read test.
package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"

	"github.com/metad/metad/internal/waitfor"

	"fmt"
)

// TestDefaultServerServes: `metad server` with no flags serves on
// 127.0.0.1:7420 within seconds, reports SERVING and lists its services.
func TestDefaultServerServes(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(proc.Binary(t), "server")
	cmd.Dir = dir
	log, _ := os.Create(filepath.Join(dir, "server.log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	conn, err := grpc.NewClient("127.0.0.1:7420", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if err := waitfor.Until(15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.Status != healthpb.HealthCheckResponse_SERVING {
			err = fmt.Errorf("%v", resp.Status)
		}
		return err
	}); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		t.Fatalf("not SERVING after 15s (last: %v)\n%s", err, b)
	}
	t.Logf("SERVING %s after start", time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(dir, "metad-data", "raft", "raft.db")); err != nil {
		t.Fatalf("data not in ./metad-data: %v", err)
	}
	// The server that answered is this one, not another on the default
	// port (this one would then have refused to start: the port is busy).
	id, err := os.ReadFile(filepath.Join(dir, "metad-data", "node-id"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := metadpb.NewClusterClient(conn).Status(ctx, &metadpb.StatusRequest{})
	if err != nil || st.LeaderId != strings.TrimSpace(string(id)) {
		b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		t.Fatalf("127.0.0.1:7420 is served by leader %q, not this server (%s): %v\n%s", st.GetLeaderId(), id, err, b)
	}
	services := listServices(t, conn)
	for _, want := range []string{"metad.v1.Metad", "metad.v1.Cluster", "grpc.health.v1.Health"} {
		if !strings.Contains(services, want) {
			t.Errorf("reflection lists %q, missing %s", services, want)
		}
	}
	// The same through the tools the README names, when installed.
	if probe, err := exec.LookPath("grpc-health-probe"); err == nil {
		if out, err := exec.Command(probe, "-addr", "127.0.0.1:7420").CombinedOutput(); err != nil || !strings.Contains(string(out), "SERVING") {
			t.Errorf("grpc-health-probe: %v %s", err, out)
		}
	}
	if grpcurl, err := exec.LookPath("grpcurl"); err == nil {
		if out, err := exec.Command(grpcurl, "-plaintext", "127.0.0.1:7420", "list").CombinedOutput(); err != nil || !strings.Contains(string(out), "metad.v1.Metad") {
			t.Errorf("grpcurl list: %v %s", err, out)
		}
	}
}

func listServices(t *testing.T, conn *grpc.ClientConn) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := grpc_reflection_v1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&grpc_reflection_v1.ServerReflectionRequest{MessageRequest: &grpc_reflection_v1.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	return strings.Join(names, " ")
}

// formed waits until every server reports one leader and n voters.
func formed(t *testing.T, c *proc.Cluster, n int) {
	t.Helper()
	c.WaitFormed(n)
}

func TestFormsInAnyStartOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		order []int
	}{
		{"3 in order", 3, []int{0, 1, 2}},
		{"3 reversed", 3, []int{2, 1, 0}},
		{"5 shuffled", 5, []int{3, 0, 4, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := proc.New(t, tc.n)
			for _, i := range tc.order {
				c.Start(i)
				// Let the order matter: each gossips before the next starts.
				c.WaitFor(c.Nodes[i].ID+" gossiping", 30*time.Second, func() bool { return strings.Contains(c.Log(i), "membership started") })
			}
			formed(t, c, tc.n)
			// One cluster: every node names the same leader.
			leader := c.WaitLeader(0)
			for i := range c.Nodes {
				if l := c.Leader(i); l != leader {
					t.Fatalf("node %d sees leader %d, node 0 sees %d", i, l, leader)
				}
			}
		})
	}
}

// TestWriteThroughFollowerReadOnAnother: a write sent to a follower is
// forwarded and acknowledged; a linearizable read on another follower,
// started after the acknowledgement, sees it.
func TestWriteThroughFollowerReadOnAnother(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	leader := c.WaitLeader(0)
	var followers []int
	for i := range c.Nodes {
		if i != leader {
			followers = append(followers, i)
		}
	}
	w := proc.NewWriter(t, c.Client(followers[0]), "forwarded")
	for round := range 20 {
		w.MustAppend(t, 1)
		s, err := c.Describe(followers[1], w.Stream)
		if err != nil {
			t.Fatal(err)
		}
		if s.CommittedEnd != w.End {
			t.Fatalf("round %d: follower %d read committed end %d after %d was acknowledged", round, followers[1], s.CommittedEnd, w.End)
		}
	}
}

// TestKillLeader: kill -9 of the leader; a new leader is elected within
// 5 s at default timings, every acknowledged write is still there, and the
// old leader restarts and catches up.
func TestKillLeader(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	w := proc.NewWriter(t, c.Client(), "survivor")
	for range 30 {
		w.MustAppend(t, 2)
	}
	old := c.WaitLeader(0)
	killed := time.Now()
	c.Kill(old)
	next := -1
	c.WaitFor("a new leader", 5*time.Second, func() bool {
		for i := range c.Nodes {
			if i != old {
				if l := c.Leader(i); l >= 0 && l != old {
					next = l
					return true
				}
			}
		}
		return false
	})
	t.Logf("new leader %s %s after kill -9", c.Nodes[next].ID, time.Since(killed).Round(time.Millisecond))
	for i := range c.Nodes {
		if i == old {
			continue
		}
		s, err := c.Describe(i, w.Stream)
		if err != nil || s.CommittedEnd != w.End {
			t.Fatalf("node %d after the kill: %v %v, want committed end %d", i, s, err, w.End)
		}
	}
	w.MustAppend(t, 1) // the new leader takes writes
	c.Start(old)
	c.WaitFor("old leader caught up", 30*time.Second, func() bool {
		s, err := c.Describe(old, w.Stream)
		return err == nil && s.CommittedEnd == w.End
	})
}

// TestWholeClusterRestart: every node killed at once, then restarted:
// every acknowledged write is still there.
func TestWholeClusterRestart(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	w := proc.NewWriter(t, c.Client(), "durable")
	for range 25 {
		w.MustAppend(t, 3)
	}
	c.KillAll()
	c.StartAll(2, 0, 1)
	formed(t, c, 3)
	for i := range c.Nodes {
		s, err := c.Describe(i, w.Stream)
		if err != nil || s.CommittedEnd != w.End || s.WriterEpoch != w.Epoch {
			t.Fatalf("node %d after restart: %+v %v, want committed end %d", i, s, err, w.End)
		}
	}
	w.MustAppend(t, 1)
}

// TestDeadServerRemovedWithoutLosingQuorum: with a short dead-server
// timeout set explicitly (the default is 72h), a killed server is removed
// from the configuration, but never below --bootstrap-expect: three
// servers formed with --bootstrap-expect 3 and a fourth added later go
// down to three voters after one kill, and stay at three after another;
// the cluster takes writes all along.
func TestDeadServerRemovedWithoutLosingQuorum(t *testing.T) {
	c := proc.New(t, 3, "--dead-server-timeout", "3s")
	fourth := c.AddNode("--dead-server-timeout", "3s")
	c.StartAll(0, 1, 2)
	c.WaitFor("three servers formed", 30*time.Second, func() bool {
		st, err := c.Status(0)
		return err == nil && st.LeaderId != "" && st.Voters == 3
	})
	c.Start(fourth) // expects 0: started with the others it would stop them forming
	formed(t, c, 4)
	w := proc.NewWriter(t, c.Client(), "churn")
	c.Kill(fourth)
	voters := func(want int) func() bool {
		return func() bool {
			l := c.Leader(0)
			if l < 0 {
				return false
			}
			st, err := c.Status(l)
			return err == nil && len(st.Nodes) == want && st.Voters == uint32(want)
		}
	}
	c.WaitFor("the dead fourth server removed", 30*time.Second, voters(3))
	w.MustAppend(t, 1)
	// A second kill: three voters remain, at --bootstrap-expect, so the
	// leader holds (and says why) instead of going down to two.
	leader := c.WaitLeader(0)
	victim := (leader + 1) % 3
	c.Kill(victim)
	c.WaitFor("the leader holds at the bootstrap-expect floor", 30*time.Second, func() bool {
		return strings.Contains(c.Log(leader), "server="+c.Nodes[victim].ID) &&
			strings.Contains(c.Log(leader), "hold=min-quorum")
	})
	st, err := c.Status(leader)
	if err != nil || st.Voters != 3 || len(st.Nodes) != 3 {
		t.Fatalf("after the second kill: %+v %v; a server was removed below --bootstrap-expect", st, err)
	}
	w.MustAppend(t, 1)
	c.Start(victim)
	c.WaitFor("the killed voter back", 30*time.Second, func() bool {
		st, err := c.Status(victim)
		return err == nil && st.Voters == 3 && st.LeaderId != ""
	})
}
