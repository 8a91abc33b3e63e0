package ops

import (
	"net/http"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/version"
)

// TestMetricsScrape scrapes /metrics of a running 3-node cluster under
// writes and finds raft's own series (bridged from go-metrics: if the bridge
// were installed on the wrong global sink they would be absent), metad's
// raft, gRPC and build series, and memberlist's; /healthz and /readyz
// answer 200 and pprof is off by default.
func TestMetricsScrape(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	w := proc.NewWriter(t, c.Client(), "scraped")
	for range 10 {
		w.MustAppend(t, 1)
	}
	for i := range c.Nodes {
		if _, err := c.Describe(i, w.Stream); err != nil { // a linearizable read on every node
			t.Fatal(err)
		}
	}
	for _, nd := range c.Nodes {
		waitReady(t, c, nd)
	}
	leader := c.WaitLeader(0)
	if leader < 0 {
		t.Fatal("no leader")
	}
	// The leader samples its followers' last contact at each lease check
	// (every LeaderLeaseTimeout).
	c.WaitFor("a last-contact sample", 20*time.Second, func() bool {
		v, _ := series(scrape(t, c.Nodes[leader].HTTP), "raft_leader_lastContact_count")
		return v >= 1
	})
	for i, nd := range c.Nodes {
		m := scrape(t, nd.HTTP)
		want := []string{
			// raft, through the go-metrics bridge
			"raft_commitTime_count", "raft_state_follower", "raft_rpc_appendEntries_count",
			// raft-wal (the log store of a new data dir) and memberlist,
			// through the same bridge
			"raft_wal_log_appends", "memberlist_gossip_count",
			// metad's own
			"metad_raft_commit_index", "metad_raft_applied_index", "metad_raft_last_log_index",
			"metad_raft_term", "metad_raft_leader", "metad_raft_leader_changes_total",
			"metad_raft_apply_duration_seconds_count", "metad_raft_read_duration_seconds_count",
			"metad_raft_readindex_batch_reads_count", "metad_raft_readindex_rounds_total",
			"metad_raft_pending_proposals", "metad_raft_waiting_reads",
			"metad_grpc_server_handled_total", "metad_grpc_server_handling_seconds_count",
			"metad_build_info",
			// the state store
			"metad_state_disk_bytes", "metad_state_cache_bytes", "metad_state_cache_hits_total", "metad_state_cache_misses_total",
			// other packages' series on the same registry
			"metad_repair_backlog_requests", "go_goroutines", "process_resident_memory_bytes",
		}
		for _, name := range want {
			if _, ok := series(m, name); !ok {
				t.Errorf("%s: %s missing from /metrics", nd.ID, name)
			}
		}
		// The release metad version prints, not the module's "(devel)".
		if _, ok := series(m, "metad_build_info", `version="`+version.Release+`"`, `commit="`); !ok {
			t.Errorf("%s: metad_build_info does not name release %s and a commit", nd.ID, version.Release)
		}
		if v, _ := series(m, "metad_raft_commit_index"); v < 10 {
			t.Errorf("%s: commit index %v after 10 appends", nd.ID, v)
		}
		if v, _ := series(m, "metad_raft_leader_changes_total"); v < 1 {
			t.Errorf("%s: saw %v leader changes, want >= 1", nd.ID, v)
		}
		if v, _ := series(m, "metad_raft_read_duration_seconds_count"); v < 1 {
			t.Errorf("%s: %v reads timed", nd.ID, v)
		}
		isLeader, _ := series(m, "metad_raft_leader")
		if (i == leader) != (isLeader == 1) {
			t.Errorf("%s: metad_raft_leader %v, leader is %s", nd.ID, isLeader, c.Nodes[leader].ID)
		}
		if i == leader {
			checkLeaderSeries(t, m)
		}
		if code := httpStatus(t, "http://"+nd.HTTP+"/healthz"); code != http.StatusOK {
			t.Errorf("%s: /healthz %d", nd.ID, code)
		}
		if code := httpStatus(t, "http://"+nd.HTTP+"/readyz"); code != http.StatusOK {
			t.Errorf("%s: /readyz %d", nd.ID, code)
		}
		if code := httpStatus(t, "http://"+nd.HTTP+"/debug/pprof/"); code != http.StatusNotFound {
			t.Errorf("%s: pprof answered %d without --pprof", nd.ID, code)
		}
	}
}

// checkLeaderSeries: the leader timed the commits and proposals, its
// confirmation rounds served the reads, and the gRPC metrics counted the
// appends by method and code.
func checkLeaderSeries(t *testing.T, m map[string]float64) {
	t.Helper()
	for name, atLeast := range map[string]float64{
		"raft_commitTime_count":                   10,
		"raft_apply":                              10,
		"metad_raft_apply_duration_seconds_count": 10,
		"metad_raft_readindex_batch_reads_count":  1,
		"raft_leader_lastContact_count":           1,
	} {
		if v, _ := series(m, name); v < atLeast {
			t.Errorf("leader: %s = %v, want >= %v", name, v, atLeast)
		}
	}
	if v, _ := series(m, "metad_raft_readindex_rounds_total", `result="confirmed"`); v < 1 {
		t.Errorf("leader: %v confirmed read rounds", v)
	}
	handled, _ := series(m, "metad_grpc_server_handled_total", `grpc_method="Propose"`, `grpc_code="OK"`)
	direct, _ := series(m, "metad_grpc_server_handled_total", `grpc_method="CommitAppend"`, `grpc_code="OK"`)
	if handled+direct < 1 {
		t.Errorf("leader: no CommitAppend or forwarded Propose counted OK")
	}
	if _, ok := series(m, "metad_grpc_server_handled_total", `grpc_method="Snapshot"`, `grpc_type="server_stream"`); !ok {
		t.Errorf("leader: Snapshot series not initialised")
	}
}

// TestPprofWhenEnabled: --pprof serves /debug/pprof on the admin address.
func TestPprofWhenEnabled(t *testing.T) {
	c := proc.New(t, 1, "--pprof")
	c.StartAll()
	waitReady(t, c, c.Nodes[0])
	if code := httpStatus(t, "http://"+c.Nodes[0].HTTP+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("pprof: %d", code)
	}
}

// waitReady waits until the node's /readyz says 200.
func waitReady(t *testing.T, c *proc.Cluster, nd *proc.Node) {
	t.Helper()
	c.WaitFor(nd.ID+" /readyz", 20*time.Second, func() bool {
		resp, err := http.Get("http://" + nd.HTTP + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
