package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/internal/ports"
)

// The cluster: three metad server processes on loopback ports that were
// free when it was made, with a shared peer secret and a shared object
// directory, as bench/compare.sh and internal/proc start them.

// node is one server process.
type node struct {
	id                       string
	grpc, raft, gossip, http string
	dataDir, logPath         string
	args                     []string
	cmd                      *exec.Cmd
	done                     chan struct{}
}

type cluster struct {
	bin, dir string
	nodes    []*node
	http     *http.Client
}

// Ports come from below Linux's ephemeral range, as internal/proc's do.
const portLow, portHigh = 20000, 32000

func newCluster(bin, dir string, n int, extra []string) (*cluster, error) {
	c := &cluster{bin: bin, dir: dir, http: &http.Client{Timeout: 5 * time.Second}}
	secret := filepath.Join(dir, "peer-secret")
	if err := os.WriteFile(secret, []byte(auth.NewPeerSecret()+"\n"), 0o600); err != nil {
		return nil, err
	}
	for i := range n {
		nd := &node{id: fmt.Sprintf("n%d", i+1)}
		for _, addr := range []*string{&nd.grpc, &nd.raft, &nd.gossip, &nd.http} {
			a, err := ports.Free(portLow, portHigh)
			if err != nil {
				return nil, err
			}
			*addr = a
		}
		nd.dataDir = filepath.Join(dir, nd.id)
		nd.logPath = filepath.Join(dir, nd.id+".log")
		c.nodes = append(c.nodes, nd)
	}
	for _, nd := range c.nodes {
		nd.args = []string{"server", "--node-id", nd.id, "--data-dir", nd.dataDir, "--grpc-addr", nd.grpc,
			"--raft-addr", nd.raft, "--gossip-addr", nd.gossip, "--http-addr", nd.http,
			"--bootstrap-expect", strconv.Itoa(n), "--object-dir", filepath.Join(dir, "objects"),
			"--peer-secret-file", secret, "--pprof"}
		for _, other := range c.nodes {
			if other != nd {
				nd.args = append(nd.args, "--join", other.gossip)
			}
		}
		nd.args = append(nd.args, extra...)
	}
	return c, nil
}

func (c *cluster) grpcAddrs() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.grpc)
	}
	return out
}

// start starts node i's process, its output appended to its log.
func (c *cluster) start(i int) error {
	nd := c.nodes[i]
	if nd.cmd != nil {
		return fmt.Errorf("%s is already running", nd.id)
	}
	log, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.bin, nd.args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, c.dir
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	nd.cmd, nd.done = cmd, done
	return nil
}

// stop sends SIGTERM (a graceful shutdown) and waits for the process to
// exit; after timeout it is killed and stop reports it.
func (c *cluster) stop(i int, timeout time.Duration) error {
	nd := c.nodes[i]
	if nd.cmd == nil {
		return nil
	}
	_ = nd.cmd.Process.Signal(syscall.SIGTERM)
	defer func() { nd.cmd = nil }()
	select {
	case <-nd.done:
		return nil
	case <-clock.After(clock.Real, timeout):
		_ = nd.cmd.Process.Kill()
		<-nd.done
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed", nd.id, timeout)
	}
}

// killAll kills every running node and waits for each.
func (c *cluster) killAll() {
	for _, nd := range c.nodes {
		if nd.cmd != nil {
			_ = nd.cmd.Process.Kill()
			<-nd.done
			nd.cmd = nil
		}
	}
}

// exited reports a node whose process ended on its own.
func (c *cluster) exited() error {
	for _, nd := range c.nodes {
		if nd.cmd == nil {
			continue
		}
		select {
		case <-nd.done:
			return fmt.Errorf("%s exited; see %s", nd.id, nd.logPath)
		default:
		}
	}
	return nil
}

// waitFor polls cond every 50ms until it holds, ctx ends, timeout passes
// or a node dies.
func (c *cluster) waitFor(ctx context.Context, what string, timeout time.Duration, cond func() bool) error {
	deadline := clock.Real.Now().Add(timeout)
	for !cond() {
		if err := c.exited(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if clock.Real.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s; logs in %s", timeout, what, c.dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clock.After(clock.Real, 50*time.Millisecond):
		}
	}
	return nil
}

// ready reports whether node i's /readyz says 200.
func (c *cluster) ready(i int) bool {
	resp, err := c.http.Get("http://" + c.nodes[i].http + "/readyz")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// metrics scrapes node i's /metrics: the value of every series, keyed by
// its name with labels as printed ("raft_fsm_restore_sum",
// `metad_raft_log_store{store="bolt"}`).
func (c *cluster) metrics(i int) (map[string]float64, error) {
	resp, err := c.http.Get("http://" + c.nodes[i].http + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: HTTP %d", c.nodes[i].id, resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads Prometheus text format: "name{labels} value" lines,
// comments skipped.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		if cut < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[cut+1:], 64)
		if err != nil {
			continue
		}
		out[line[:cut]] = v
	}
	return out, sc.Err()
}

// memory reads node i's VmRSS and VmHWM, then has it collect garbage
// (its /debug/pprof/heap?gc=1, served with --pprof) and reads its live
// heap (go_memstats_heap_alloc_bytes).
func (c *cluster) memory(i int) (NodeMemory, error) {
	nd := c.nodes[i]
	m := NodeMemory{Node: nd.id}
	if nd.cmd == nil {
		return m, fmt.Errorf("%s is not running", nd.id)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", nd.cmd.Process.Pid))
	if err != nil {
		return m, err
	}
	m.RSSBytes, m.PeakBytes, err = parseStatus(f)
	f.Close()
	if err != nil {
		return m, err
	}
	if err := c.collectGarbage(i); err != nil {
		return m, err
	}
	metrics, err := c.metrics(i)
	if err != nil {
		return m, err
	}
	m.HeapBytes = int64(metrics["go_memstats_heap_alloc_bytes"])
	return m, nil
}

// collectGarbage asks node i for a heap profile after a garbage
// collection, and discards the profile.
func (c *cluster) collectGarbage(i int) error {
	hc := &http.Client{Timeout: 5 * time.Minute} // a GC of a large heap on a busy machine
	resp, err := hc.Get("http://" + c.nodes[i].http + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s /debug/pprof/heap: HTTP %d (is --pprof on?)", c.nodes[i].id, resp.StatusCode)
	}
	return nil
}

// parseStatus reads VmRSS and VmHWM (kB) from a /proc/PID/status file.
func parseStatus(r io.Reader) (rss, peak int64, err error) {
	fields, err := kBFields(r, "VmRSS:", "VmHWM:")
	if err != nil {
		return 0, 0, err
	}
	return fields["VmRSS:"], fields["VmHWM:"], nil
}

// memAvailable reads the machine's MemAvailable.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	fields, _ := kBFields(f, "MemAvailable:")
	return fields["MemAvailable:"]
}

// kBFields reads "Name:   123 kB" lines and returns the named ones in
// bytes; a missing one is an error.
func kBFields(r io.Reader, names ...string) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		for _, name := range names {
			if f[0] == name {
				kb, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%s %q: %w", name, f[1], err)
				}
				out[name] = kb << 10
			}
		}
	}
	for _, name := range names {
		if _, ok := out[name]; !ok {
			return out, fmt.Errorf("no %s line", name)
		}
	}
	return out, sc.Err()
}

// status asks the cluster (any member) for its status.
func status(ctx context.Context, cl *client.Client) (*metadpb.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return client.Call(ctx, cl, cl.Cluster.Status, &metadpb.StatusRequest{})
}

// leader returns the index of the leader node, or an error if none is
// known.
func (c *cluster) leader(ctx context.Context, cl *client.Client) (int, error) {
	st, err := status(ctx, cl)
	if err != nil {
		return -1, err
	}
	for i, nd := range c.nodes {
		if nd.id == st.LeaderId {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no leader known (status names %q)", st.LeaderId)
}

// waitFormed waits until every node is ready and the cluster has three
// voters and a leader.
func (c *cluster) waitFormed(ctx context.Context, cl *client.Client, timeout time.Duration) error {
	for i, nd := range c.nodes {
		if err := c.waitFor(ctx, nd.id+" /readyz", timeout, func() bool { return c.ready(i) }); err != nil {
			return err
		}
	}
	return c.waitFor(ctx, "three voters and a leader", timeout, func() bool {
		st, err := status(ctx, cl)
		return err == nil && st.Voters == uint32(len(c.nodes)) && st.LeaderId != ""
	})
}

// snapshotMeta is the part of raft's meta.json this tool reads.
type snapshotMeta struct {
	Index uint64
	Size  int64
}

// newestSnapshot returns the newest complete raft snapshot in node i's
// data dir (raftstore's raft.FileSnapshotStore keeps them under
// raft/snapshots/, in an ID.tmp directory until they are complete), if
// any.
func (c *cluster) newestSnapshot(i int) (snapshotMeta, bool) {
	metas, _ := filepath.Glob(filepath.Join(c.nodes[i].dataDir, "raft", "snapshots", "*", "meta.json"))
	var best snapshotMeta
	found := false
	for _, p := range metas {
		if strings.HasSuffix(filepath.Dir(p), ".tmp") {
			continue // still being written: raft renames it when done
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // being written or pruned
		}
		var m snapshotMeta
		if json.Unmarshal(b, &m) == nil && (!found || m.Index > best.Index) {
			best, found = m, true
		}
	}
	return best, found
}

// logSize is the length of node i's log so far, for reading what a new
// process of it writes (logSince).
func (c *cluster) logSize(i int) int64 {
	st, err := os.Stat(c.nodes[i].logPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logSince returns node i's log from offset on.
func (c *cluster) logSince(i int, offset int64) string {
	b, err := os.ReadFile(c.nodes[i].logPath)
	if err != nil || int64(len(b)) < offset {
		return ""
	}
	return string(b[offset:])
}

// startupRestore finds, in a server's log, raft's restore of its own
// snapshot at start ("starting restore from snapshot" ... "restored from
// snapshot") and returns how long it took. The raft_fsm_restore metric
// misses it: the restore runs before the node's metrics are bridged.
func startupRestore(log string) (time.Duration, bool) {
	var start time.Time
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(line, `msg="starting restore from snapshot"`):
			start, _ = logTime(line)
		case strings.Contains(line, `msg="restored from snapshot"`) && !start.IsZero():
			if end, ok := logTime(line); ok {
				return end.Sub(start), true
			}
		}
	}
	return 0, false
}

// logTime reads the time= field of a text-format log line.
func logTime(line string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(line, "time=")
	if !ok {
		return time.Time{}, false
	}
	field, _, _ := strings.Cut(rest, " ")
	t, err := time.Parse(time.RFC3339Nano, field)
	return t, err == nil
}

// countInLog counts lines of node i's log that contain s.
func (c *cluster) countInLog(i int, s string) int {
	b, err := os.ReadFile(c.nodes[i].logPath)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}
