package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"
)

func nodeRow(id, state, leader string, voter bool, errText string) *metadpb.NodeStatus {
	return &metadpb.NodeStatus{NodeId: id, State: state, LeaderId: leader, Voter: voter, Error: errText}
}

func TestJudgeCluster(t *testing.T) {
	refused := `rpc error: code = Unavailable desc = connection error: desc = "transport: dial tcp 127.0.0.1:7431: connect: connection refused"`
	for _, c := range []struct {
		name string
		st   *metadpb.StatusResponse
		want clusterHealth
		line string
		exit int // of status and endpoint health: 4 without a leader or a quorum
	}{
		{"all well", &metadpb.StatusResponse{LeaderId: "n1", Nodes: []*metadpb.NodeStatus{
			nodeRow("n1", "Leader", "n1", true, ""), nodeRow("n2", "Follower", "n1", true, ""), nodeRow("n3", "Follower", "n1", true, "")}},
			clusterHealth{Voters: 3, Healthy: 3, Quorum: 2, Tolerates: 1}, "leader n1; 3 voters, 3 healthy, quorum 2, tolerates 1 more failure(s)", exitOK},
		{"one down", &metadpb.StatusResponse{LeaderId: "n1", Nodes: []*metadpb.NodeStatus{
			nodeRow("n1", "Leader", "n1", true, ""), nodeRow("n2", "Follower", "n1", true, ""), nodeRow("n3", "UNREACHABLE", "", true, refused)}},
			clusterHealth{Voters: 3, Healthy: 2, Quorum: 2, Tolerates: 0}, "tolerates 0 more failure(s)", exitOK},
		{"follower without the leader, non-voter ignored", &metadpb.StatusResponse{LeaderId: "n1", Nodes: []*metadpb.NodeStatus{
			nodeRow("n1", "Leader", "n1", true, ""), nodeRow("n2", "Follower", "", true, ""), nodeRow("n3", "Candidate", "", true, ""),
			nodeRow("n4", "Follower", "n1", false, "")}},
			clusterHealth{Voters: 3, Healthy: 1, Quorum: 2, NoQuorum: true}, "NO QUORUM", exitRetryable},
		// Every server up and none knowing a leader, an election under way:
		// a quorum that could elect one, but NO LEADER now, and so exit 4.
		{"all up, no leader yet", &metadpb.StatusResponse{Nodes: []*metadpb.NodeStatus{
			nodeRow("n1", "Candidate", "", true, ""), nodeRow("n2", "Follower", "", true, ""), nodeRow("n3", "Follower", "", true, "")}},
			clusterHealth{Voters: 3, Healthy: 3, Quorum: 2, Tolerates: 1, NoLeader: true}, "NO LEADER; 3 voters, 3 healthy", exitRetryable},
		{"two down, no leader", &metadpb.StatusResponse{Nodes: []*metadpb.NodeStatus{
			nodeRow("n1", "Follower", "", true, ""), nodeRow("n2", "UNREACHABLE", "", true, refused), nodeRow("n3", "UNREACHABLE", "", true, refused)}},
			clusterHealth{Voters: 3, Healthy: 1, Quorum: 2, NoLeader: true, NoQuorum: true}, "NO LEADER; 3 voters, 1 healthy, quorum 2: NO QUORUM", exitRetryable},
	} {
		got := judgeCluster(c.st)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if line := got.summary(c.st.LeaderId); !strings.Contains(line, c.line) {
			t.Errorf("%s: summary %q lacks %q", c.name, line, c.line)
		}
		if code := exitCode(got.verdict(c.st.LeaderId)); code != c.exit {
			t.Errorf("%s: exit %d, want %d", c.name, code, c.exit)
		}
	}
}

func TestShortReason(t *testing.T) {
	for in, want := range map[string]string{
		`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:7431: connect: connection refused"`: "unreachable: connection refused",
		`rpc error: code = DeadlineExceeded desc = context deadline exceeded`:                                                                                  "unreachable: no answer in time",
		`rpc error: code = Internal desc = something odd`:                                                                                                      "unreachable: something odd",
	} {
		if got := shortReason(in); got != want {
			t.Errorf("shortReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStatusIsHonest: with one of three servers down the status says it
// tolerates no more failures and shows the down server's gRPC address and
// a short reason; with two down it says NO LEADER and NO QUORUM. Hashes
// are hex in JSON as in the table.
func TestStatusIsHonest(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	c.WaitFor("a leader known to all", time.Minute, func() bool {
		for i := range c.Nodes {
			if c.Leader(i) < 0 {
				return false
			}
		}
		return true
	})
	run := func(from int, args ...string) string {
		t.Helper()
		out, err := runMetad(t, append(args, "--addr", c.Nodes[from].GRPC)...)
		if err != nil {
			t.Fatalf("metad %v: %v\n%s", args, err, out)
		}
		return out
	}
	applied := func(args ...string) string {
		var st struct {
			Nodes []struct {
				Applied uint64 `json:"applied_index"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal([]byte(run(0, append([]string{"status", "-o", "json"}, args...)...)), &st); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(st.Nodes)
	}
	// On a quiet cluster, --hash leaves the APPLIED column as it is.
	var before string
	c.WaitFor("a quiet cluster", 30*time.Second, func() bool {
		prev := before
		before = applied()
		return before == prev
	})
	if withHash := applied("--hash"); withHash != before || applied() != before {
		t.Errorf("applied indexes %s without --hash, %s with", before, withHash)
	}
	checkClusterIDShown(t, c, run)

	var st struct {
		Nodes []struct {
			NodeID       string `json:"node_id"`
			StateHash    string `json:"state_hash"`
			RaftLogStore string `json:"raft_log_store"`
		} `json:"nodes"`
		FailureTolerance int  `json:"failure_tolerance"`
		NoQuorum         bool `json:"no_quorum"`
	}
	if err := json.Unmarshal([]byte(run(0, "status", "--hash", "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if len(n.StateHash) != 64 || strings.Trim(n.StateHash, "0123456789abcdef") != "" {
			t.Errorf("%s: state hash %q is not hex SHA-256", n.NodeID, n.StateHash)
		}
		// New data dirs, the default --raft-log-store auto: wal.
		if n.RaftLogStore != "wal" {
			t.Errorf("%s: raft log store %q, want wal", n.NodeID, n.RaftLogStore)
		}
	}
	if st.FailureTolerance != 1 || st.NoQuorum {
		t.Errorf("all up: tolerance %d, no quorum %v", st.FailureTolerance, st.NoQuorum)
	}
	c.WaitFor("every member ready", 30*time.Second, func() bool {
		out, err := runMetad(t, "endpoint", "health", "--addr", c.Nodes[0].GRPC)
		return err == nil && strings.Count(out, " healthy ") == 3
	})

	down := (c.Leader(0) + 1) % 3 // a follower
	c.Kill(down)
	from := (down + 1) % 3
	c.WaitFor("the status to see the kill", 30*time.Second, func() bool {
		out, _ := runMetad(t, "status", "--addr", c.Nodes[from].GRPC)
		return strings.Contains(out, "2 healthy")
	})
	out := run(from, "status")
	row := lineWith(out, c.Nodes[down].ID+" ")
	if !strings.Contains(out, "tolerates 0 more failure(s)") || !strings.Contains(row, c.Nodes[down].GRPC) ||
		strings.Contains(row, c.Nodes[down].Raft) || !strings.Contains(row, "unreachable: ") || strings.Contains(row, "rpc error") {
		t.Errorf("one down:\n%s", out)
	}
	// With a quorum, endpoint health exits 0 and names the member down.
	out = run(from, "endpoint", "health")
	if row := lineWith(out, c.Nodes[down].GRPC); !strings.Contains(row, "UNHEALTHY") || !strings.Contains(row, "unreachable") ||
		strings.Count(out, " healthy ") != 2 {
		t.Errorf("endpoint health, one down:\n%s", out)
	}

	c.Kill((down + 2) % 3)
	c.WaitFor("NO LEADER", 30*time.Second, func() bool {
		out, _ := runMetad(t, "status", "--addr", c.Nodes[from].GRPC)
		return strings.Contains(out, "NO LEADER")
	})
	// Without a quorum, status and endpoint health print and exit 4.
	s := &realServer{bin: proc.Binary(t), addr: c.Nodes[from].GRPC}
	if out, code := s.run(t, "status"); code != exitRetryable || !strings.Contains(out, "NO QUORUM") || strings.Contains(out, "tolerates") {
		t.Errorf("two down: exit %d\n%s", code, out)
	}
	if out, code := s.run(t, "endpoint", "health", "-o", "json"); code != exitRetryable || !strings.Contains(out, `"quorum": false`) {
		t.Errorf("endpoint health, two down: exit %d\n%s", code, out)
	}
}

func runMetad(t *testing.T, args ...string) (string, error) {
	t.Helper()
	s := &realServer{bin: proc.Binary(t)}
	out, code := s.run(t, args...)
	if code != 0 {
		return out, fmt.Errorf("exit %d", code)
	}
	return out, nil
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// checkClusterIDShown: once the leader has given the cluster its id, the
// status JSON has it for the cluster and for every node, the table and
// metad members print it.
func checkClusterIDShown(t *testing.T, c *proc.Cluster, run func(int, ...string) string) {
	t.Helper()
	var st struct {
		ClusterID string `json:"cluster_id"`
		Nodes     []struct {
			NodeID    string `json:"node_id"`
			ClusterID string `json:"cluster_id"`
		} `json:"nodes"`
	}
	c.WaitFor("every node to know the cluster id", 30*time.Second, func() bool {
		out, err := runMetad(t, "status", "-o", "json", "--addr", c.Nodes[0].GRPC)
		if err != nil || json.Unmarshal([]byte(out), &st) != nil || len(st.ClusterID) != 32 {
			return false
		}
		for _, n := range st.Nodes {
			if n.ClusterID != st.ClusterID {
				return false
			}
		}
		return true
	})
	if out := run(1, "status"); !strings.Contains(out, "cluster id "+st.ClusterID) {
		t.Errorf("status table lacks cluster id %s:\n%s", st.ClusterID, out)
	}
	if out := run(2, "members"); !strings.Contains(out, "cluster id "+st.ClusterID) {
		t.Errorf("members lacks cluster id %s:\n%s", st.ClusterID, out)
	}
}
