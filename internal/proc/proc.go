// Package proc runs real metad processes for tests: it builds the binary
// once, starts clusters of servers on free loopback ports, and kills,
// pauses, resumes and restarts them. Every process a test starts is
// stopped when the test ends.
package proc

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/internal/ports"
)

var plainBuild binaryBuild

// Binary builds cmd/metad once per test binary and returns its path. The
// binary has the state machine's invariants built in (metad_invariants):
// it checks them as it applies, and a broken one panics the server.
func Binary(t testing.TB) string {
	t.Helper()
	return plainBuild.path(t, "metad-bin-", "metad_invariants")
}

// binaryBuild is one build of cmd/metad, made once per test binary.
type binaryBuild struct {
	once sync.Once
	bin  string
	err  error
}

// path builds cmd/metad with tags into a new temporary directory named
// after prefix, the first time, and returns the binary's path.
func (b *binaryBuild) path(t testing.TB, prefix string, tags ...string) string {
	t.Helper()
	b.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", prefix)
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, "metad")
		args := []string{"build", "-o", b.bin}
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		cmd := exec.Command("go", append(args, "./cmd/metad")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
			return
		}
		b.err = checkInvariantsBuiltIn(b.bin)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// checkInvariantsBuiltIn fails unless the binary at bin was built with
// the tag metad_invariants, under which every state machine of the server
// checks its invariants as it applies (package fsm, invariants_on.go): the
// tests of real processes rely on it to catch a broken state where it
// breaks.
func checkInvariantsBuiltIn(bin string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("proc: read the build info of %s: %w", bin, err)
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), "metad_invariants") {
			return nil
		}
	}
	return fmt.Errorf("proc: %s was built without -tags metad_invariants (settings %v)", bin, info.Settings)
}

// FreePort returns a loopback address whose port is free for TCP and UDP
// right now. Ports come from [20000, 32000), below Linux's ephemeral range,
// so they cannot collide with the ports other tests get from ":0"; a port
// is never handed out twice by one test binary.
func FreePort(t testing.TB) string {
	t.Helper()
	addr, err := ports.Free(20000, 32000)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Node is one server process of a Cluster.
type Node struct {
	ID                       string
	GRPC, Raft, Gossip, HTTP string
	DataDir                  string
	Args                     []string // flags, fixed at creation
	Bin                      string   // the binary to run; "" is the Cluster's (Binary)
	Env                      []string // added to the environment, e.g. METAD_FAULTS=... (with FaultsBinary)
	mu                       sync.Mutex
	cmd                      *exec.Cmd
	done                     chan struct{}
	logPath                  string
	paused                   bool
}

// SetDataDir moves the node's data dir to dir (a small or faulty
// filesystem a test mounted), before it first starts.
func (nd *Node) SetDataDir(dir string) {
	nd.DataDir = dir
	for i, a := range nd.Args {
		if a == "--data-dir" && i+1 < len(nd.Args) {
			nd.Args[i+1] = dir
		}
	}
}

// Cluster is a set of metad server processes that may form one cluster.
type Cluster struct {
	t     testing.TB
	bin   string
	Dir   string
	Nodes []*Node
	// ClientTLS, if set, is how Client and Status reach TLS servers.
	ClientTLS *client.TLS
}

// New prepares (without starting) n servers with --bootstrap-expect n that
// join each other. extra flags are added to every server.
func New(t testing.TB, n int, extra ...string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: Binary(t), Dir: t.TempDir()}
	// Without TLS, nodes prove to each other they are peers with a shared
	// secret; with TLS (in extra) it is unused.
	secret := filepath.Join(c.Dir, "peer-secret")
	if err := os.WriteFile(secret, []byte(auth.NewPeerSecret()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{
			ID: fmt.Sprintf("n%d", i+1), GRPC: FreePort(t), Raft: FreePort(t), Gossip: FreePort(t), HTTP: FreePort(t),
			DataDir: filepath.Join(c.Dir, fmt.Sprintf("n%d", i+1)),
		})
	}
	for _, nd := range c.Nodes {
		nd.Args = []string{"server", "--node-id", nd.ID, "--data-dir", nd.DataDir, "--grpc-addr", nd.GRPC,
			"--raft-addr", nd.Raft, "--gossip-addr", nd.Gossip, "--http-addr", nd.HTTP,
			"--bootstrap-expect", fmt.Sprint(n), "--object-dir", filepath.Join(c.Dir, "objects"),
			"--peer-secret-file", secret}
		for _, other := range c.Nodes {
			if other != nd {
				nd.Args = append(nd.Args, "--join", other.Gossip)
			}
		}
		nd.Args = append(nd.Args, extra...)
		nd.logPath = filepath.Join(c.Dir, nd.ID+".log")
	}
	t.Cleanup(func() {
		c.KillAll()
		if t.Failed() {
			c.dumpLogs()
		}
	})
	return c
}

// PeerSecret is the secret the servers share to call each other's
// node-to-node service without TLS, for tests that call it as a node.
func (c *Cluster) PeerSecret() string {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir, "peer-secret"))
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// WithoutPeerSecret removes --peer-secret-file from the flags of the given
// servers (default: all), for servers of a release from before the secret,
// which neither accept the flag nor send the secret. A server of this
// release refuses to start in a cluster without it.
func (c *Cluster) WithoutPeerSecret(idx ...int) {
	if len(idx) == 0 {
		for i := range c.Nodes {
			idx = append(idx, i)
		}
	}
	for _, i := range idx {
		nd := c.Nodes[i]
		var args []string
		for i := 0; i < len(nd.Args); i++ {
			if nd.Args[i] == "--peer-secret-file" {
				i++
				continue
			}
			args = append(args, nd.Args[i])
		}
		nd.Args = args
	}
}

// Start starts server i (again, after a kill or stop).
func (c *Cluster) Start(i int) {
	c.t.Helper()
	nd := c.Nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil {
		c.t.Fatalf("%s is already running", nd.ID)
	}
	log, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	bin := c.bin
	if nd.Bin != "" {
		bin = nd.Bin
	}
	cmd := exec.Command(bin, nd.Args...)
	if len(nd.Env) > 0 {
		cmd.Env = append(os.Environ(), nd.Env...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = c.Dir
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	nd.cmd, nd.done, nd.paused = cmd, done, false
}

// StartAll starts every server, in the given order (default 0..n-1).
func (c *Cluster) StartAll(order ...int) {
	if len(order) == 0 {
		for i := range c.Nodes {
			order = append(order, i)
		}
	}
	for _, i := range order {
		c.Start(i)
	}
}

// Kill sends SIGKILL to server i and waits for it to exit.
func (c *Cluster) Kill(i int) { c.signal(i, syscall.SIGKILL, true) }

// Stop sends SIGTERM (graceful shutdown) and waits for it to exit.
func (c *Cluster) Stop(i int) { c.signal(i, syscall.SIGTERM, true) }

// Reload sends SIGHUP: server i re-reads its certificates and tokens.
func (c *Cluster) Reload(i int) { c.signal(i, syscall.SIGHUP, false) }

// Pause stops server i with SIGSTOP; Resume continues it with SIGCONT.
func (c *Cluster) Pause(i int)  { c.signal(i, syscall.SIGSTOP, false) }
func (c *Cluster) Resume(i int) { c.signal(i, syscall.SIGCONT, false) }

// Running reports whether server i's process is alive.
func (c *Cluster) Running(i int) bool {
	nd := c.Nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil
}

// PID returns server i's process id, 0 when it is not running, for a
// test that reads its /proc entry (peak memory, say).
func (c *Cluster) PID(i int) int {
	nd := c.Nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return 0
	}
	return nd.cmd.Process.Pid
}

func (c *Cluster) signal(i int, sig syscall.Signal, wait bool) {
	c.t.Helper()
	nd := c.Nodes[i]
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	if cmd == nil {
		nd.mu.Unlock()
		return
	}
	if nd.paused && (sig == syscall.SIGTERM || sig == syscall.SIGKILL) {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(sig)
	nd.paused = sig == syscall.SIGSTOP || (nd.paused && sig != syscall.SIGCONT)
	if wait {
		nd.cmd = nil
	}
	nd.mu.Unlock()
	if !wait {
		return
	}
	select {
	case <-done:
	case <-clock.After(clock.Real, 30*time.Second):
		_ = cmd.Process.Kill()
		<-done
		c.t.Errorf("%s did not exit within 30s of %v", nd.ID, sig)
	}
}

// WaitExit waits up to timeout for server i to exit by itself and returns
// its exit code; ok is false if it is still running then (or was not).
func (c *Cluster) WaitExit(i int, timeout time.Duration) (code int, ok bool) {
	nd := c.Nodes[i]
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.mu.Unlock()
	if cmd == nil {
		return 0, false
	}
	select {
	case <-done:
	case <-clock.After(clock.Real, timeout):
		return 0, false
	}
	nd.mu.Lock()
	nd.cmd = nil
	nd.mu.Unlock()
	return cmd.ProcessState.ExitCode(), true
}

// KillAll kills every running server.
func (c *Cluster) KillAll() {
	for i := range c.Nodes {
		c.Kill(i)
	}
}

// Client returns a client of the given servers (default: all).
func (c *Cluster) Client(idx ...int) *client.Client {
	c.t.Helper()
	if len(idx) == 0 {
		for i := range c.Nodes {
			idx = append(idx, i)
		}
	}
	var addrs []string
	for _, i := range idx {
		addrs = append(addrs, c.Nodes[i].GRPC)
	}
	// SpreadCalls: tests choose which servers they talk to (a follower, to
	// exercise forwarding; the old leader, to catch stale reads).
	cl, err := client.New(client.Config{Addrs: addrs, Timeout: 10 * time.Second, SpreadCalls: true, TLS: c.ClientTLS})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// Status asks server i for the cluster status.
func (c *Cluster) Status(i int) (*metadpb.StatusResponse, error) {
	cl, err := client.New(client.Config{Addrs: []string{c.Nodes[i].GRPC}, TLS: c.ClientTLS})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return cl.Cluster.Status(ctx, &metadpb.StatusRequest{})
}

// Describe reads a stream through server i only, retrying what the server
// calls retryable (a new leader refuses reads until its term's barrier is
// applied, for one) for up to 10 s, as a broker's client would.
func (c *Cluster) Describe(i int, stream uint64) (*metadpb.Stream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := c.Client(i)
	resp, err := client.Call(ctx, cl, cl.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: stream})
	if err != nil {
		return nil, err
	}
	return resp.Stream, nil
}

// WaitFor polls cond until it holds or the timeout passes.
func (c *Cluster) WaitFor(what string, timeout time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := clock.Real.Now().Add(timeout)
	for !cond() {
		if clock.Real.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s; logs in %s", timeout, what, c.Dir)
		}
		<-clock.After(clock.Real, 100*time.Millisecond) // poll interval
	}
}

// Leader returns the index of the server that server `from` reports as
// leader, with all voters it lists, or -1.
func (c *Cluster) Leader(from int) int {
	st, err := c.Status(from)
	if err != nil || st.LeaderId == "" {
		return -1
	}
	for i, nd := range c.Nodes {
		if nd.ID == st.LeaderId {
			return i
		}
	}
	return -1
}

// WaitLeader waits up to 30 s for server `from` to name a leader and
// returns its index. Right after a cluster formed, one status call can
// still miss (an election under way, or a call timed out on a loaded
// machine), which Leader reports as -1.
func (c *Cluster) WaitLeader(from int) int {
	c.t.Helper()
	leader := -1
	c.WaitFor(fmt.Sprintf("server %d to name a leader", from), 30*time.Second, func() bool {
		leader = c.Leader(from)
		return leader >= 0
	})
	return leader
}

// Log returns server i's log so far.
func (c *Cluster) Log(i int) string {
	b, _ := os.ReadFile(c.Nodes[i].logPath)
	return string(b)
}

// dumpLogs writes the tail of every server's log to the test log, since the
// test's directory is removed when it ends.
func (c *Cluster) dumpLogs() {
	for i, nd := range c.Nodes {
		lines := strings.Split(strings.TrimSpace(c.Log(i)), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		c.t.Logf("---- %s log (last %d lines) ----\n%s", nd.ID, len(lines), strings.Join(lines, "\n"))
	}
}
