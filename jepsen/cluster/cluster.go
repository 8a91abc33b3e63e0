// Package cluster runs real metad server processes on loopback for the
// Jepsen harness: it builds the binary (with -tags metad_faults), starts 3
// or 5 servers whose every directed peer link (raft, gRPC forwarding,
// gossip) goes through its own Proxy, and kills, pauses, resumes, wipes,
// restarts, partitions, slows and skews them. Clients connect to the
// servers' gRPC addresses directly, never through proxies.
//
// The object store (store.go) is a shared directory or a versioned bucket
// in a real SeaweedFS weed mini, reached by servers and harness alike
// through an S3Proxy that can hide a key; it can hide and restore a
// version, and pause, kill and restart weed.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/internal/faultfs"
	"github.com/metad/metad/internal/ports"
)

// Config is one cluster's shape.
type Config struct {
	// Binary is the metad binary to run (see Build).
	Binary string
	// Dir holds data dirs, the shared object store and logs.
	Dir string
	// Nodes is 3 or 5.
	Nodes int
	// Faults is METAD_FAULTS for every server: planted bugs ("" for none).
	Faults string
	// Extra flags for every server (timings).
	Extra []string
	// TLS runs every server with mutual TLS and the harness's clients with
	// an operator certificate (tls.go).
	TLS bool
	// Store is the object store: StoreLocal (default) or StoreS3 (store.go).
	Store string
	// DiskSize, if positive, puts each node's data dir on its own tmpfs of
	// this many bytes (disk.go), for the disk-full nemesis; it needs root.
	DiskSize int64
	// FaultFS puts each node's data dir on its own fault filesystem
	// (faultfs.go), for the disk-error and lose-unsynced nemeses; it needs
	// root and /dev/fuse.
	FaultFS bool
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Binary == "" {
		errs = append(errs, errors.New("cluster: Binary required"))
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("cluster: Dir required"))
	}
	if c.Nodes < 1 || c.Nodes > 9 {
		errs = append(errs, fmt.Errorf("cluster: Nodes %d outside [1, 9]", c.Nodes))
	}
	if c.DiskSize < 0 {
		errs = append(errs, fmt.Errorf("cluster: DiskSize %d is negative", c.DiskSize))
	}
	if c.DiskSize > 0 && c.FaultFS {
		errs = append(errs, errors.New("cluster: DiskSize and FaultFS both set: a data dir has one filesystem"))
	}
	return errors.Join(errs...)
}

// Protocols of a peer link.
const (
	Raft   = "raft"
	GRPC   = "grpc"
	Gossip = "gossip"
)

// Protocols lists every protocol a partition cuts.
var Protocols = []string{Raft, GRPC, Gossip}

// Link names one directed link of one protocol: From dials To.
type Link struct {
	From, To int
	Proto    string
}

// Node is one server.
type Node struct {
	Index                    int
	ID                       string
	GRPC, Raft, Gossip, HTTP string
	DataDir, LogPath         string
	// Mount is the node's own filesystem, holding DataDir ("": none).
	Mount string
	// faults is the node's fault filesystem, holding DataDir (nil: none).
	faults *faultfs.FS
	// Guarded by Cluster.mu.
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// Cluster is a set of metad processes and the proxies between them.
type Cluster struct {
	cfg     Config
	Nodes   []*Node
	Objects string // the local store's directory, or weed mini's
	Store   *ObjectStore
	proxies map[Link]*Proxy
	clients []*client.Client // one per node, direct
	mu      sync.Mutex       // guards every Node's process fields
}

// New allocates ports, proxies and directories; nothing runs yet.
func New(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Store == "" {
		cfg.Store = StoreLocal
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	store, err := newObjectStore(cfg.Store, cfg.Dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, Objects: store.Dir, Store: store, proxies: map[Link]*Proxy{}}
	if err := writePeerSecret(c.peerSecretFile()); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	for i := range cfg.Nodes {
		n := &Node{Index: i, ID: fmt.Sprintf("n%d", i+1), DataDir: filepath.Join(cfg.Dir, fmt.Sprintf("n%d", i+1)),
			LogPath: filepath.Join(cfg.Dir, fmt.Sprintf("n%d.log", i+1))}
		for _, addr := range []*string{&n.GRPC, &n.Raft, &n.Gossip, &n.HTTP} {
			var err error
			if *addr, err = freePort(); err != nil {
				return nil, errors.Join(err, c.Close())
			}
		}
		c.Nodes = append(c.Nodes, n)
	}
	if err := c.mountDataDirs(); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	for _, from := range c.Nodes {
		for _, to := range c.Nodes {
			if from == to {
				continue
			}
			for _, proto := range Protocols {
				target := map[string]string{Raft: to.Raft, GRPC: to.GRPC, Gossip: to.Gossip}[proto]
				p, err := NewProxy(fmt.Sprintf("%s>%s/%s", from.ID, to.ID, proto), target, proto == Gossip)
				if err != nil {
					return nil, errors.Join(err, c.Close())
				}
				c.proxies[Link{from.Index, to.Index, proto}] = p
			}
		}
	}
	if cfg.TLS {
		if err := c.setupTLS(); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	for _, n := range c.Nodes {
		cl, err := client.New(c.ClientConfig([]string{n.GRPC}))
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		c.clients = append(c.clients, cl)
	}
	return c, nil
}

// mountDataDirs puts every node's data dir on its own filesystem, if the
// config asks for one: a tmpfs (disk.go) or a fault filesystem
// (faultfs.go).
func (c *Cluster) mountDataDirs() error {
	switch {
	case c.cfg.DiskSize > 0:
		return c.mountDisks(c.cfg.DiskSize)
	case c.cfg.FaultFS:
		return c.mountFaultFS()
	}
	return nil
}

// Node ports come from [portLow, portHigh): below the kernel's ephemeral
// range (32768 and up), so no proxy listener or outgoing connection can
// take a node's port while the node is down and must restart on it, and
// apart from internal/proc's [20000, 32000) so concurrent test suites do
// not pick the same ones.
const portLow, portHigh = 14000, 20000

// freePort returns a node address in [portLow, portHigh).
func freePort() (string, error) { return ports.Free(portLow, portHigh) }

// Client is a client of node i only.
func (c *Cluster) Client(i int) *client.Client { return c.clients[i] }

// args are node i's flags. fresh: join an existing cluster as a new server
// (no --bootstrap-expect), as after a wipe.
func (c *Cluster) args(i int, fresh bool) []string {
	n := c.Nodes[i]
	a := []string{"server", "--node-id", n.ID, "--data-dir", n.DataDir, "--grpc-addr", n.GRPC, "--raft-addr", n.Raft,
		"--gossip-addr", n.Gossip, "--http-addr", n.HTTP, "--log-level", "info",
		"--peer-secret-file", c.peerSecretFile()}
	a = append(a, c.Store.ServerArgs()...)
	if !fresh {
		a = append(a, "--bootstrap-expect", fmt.Sprint(len(c.Nodes)))
	}
	for _, o := range c.Nodes {
		if o == n {
			continue
		}
		a = append(a, "--join", o.Gossip)
		for _, proto := range Protocols {
			addr := map[string]string{Raft: o.Raft, GRPC: o.GRPC, Gossip: o.Gossip}[proto]
			a = append(a, "--dial-map", addr+"="+c.proxies[Link{i, o.Index, proto}].Addr())
		}
	}
	a = append(a, c.tlsArgs(n)...)
	return append(a, c.cfg.Extra...)
}

// Start starts node i (fresh: as a new server joining the cluster).
func (c *Cluster) Start(i int, fresh bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.Nodes[i]
	if n.cmd != nil && !exited(n.done) {
		return nil
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== jepsen: starting %s (fresh=%v) at %s\n", n.ID, fresh, clock.Real.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(c.cfg.Binary, c.args(i, fresh)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "METAD_FAULTS="+c.cfg.Faults)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { // owned by the node: ends when the process does
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	n.cmd, n.done, n.paused = cmd, done, false
	return nil
}

// StartAll starts every node.
func (c *Cluster) StartAll() error {
	for i := range c.Nodes {
		if err := c.Start(i, false); err != nil {
			return err
		}
	}
	return nil
}

// Kill sends SIGKILL to node i and waits for it to exit.
func (c *Cluster) Kill(i int) { c.signal(i, syscall.SIGKILL) }

// Pause stops node i with SIGSTOP; Resume continues it.
func (c *Cluster) Pause(i int)  { c.signal(i, syscall.SIGSTOP) }
func (c *Cluster) Resume(i int) { c.signal(i, syscall.SIGCONT) }

// Running reports whether node i's process exists (paused or not).
func (c *Cluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Nodes[i].cmd != nil && !exited(c.Nodes[i].done)
}

// Exited reports whether node i's process ended by itself (not killed by
// the harness) and has not been started again.
func (c *Cluster) Exited(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Nodes[i].cmd != nil && exited(c.Nodes[i].done)
}

// ExitCode is node i's exit status once it exited by itself (-1 if it
// has not, or a signal ended it).
func (c *Cluster) ExitCode(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.Nodes[i]
	if n.cmd == nil || !exited(n.done) || n.cmd.ProcessState == nil {
		return -1
	}
	return n.cmd.ProcessState.ExitCode()
}

func exited(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Up reports whether node i runs and is not paused.
func (c *Cluster) Up(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Nodes[i].cmd != nil && !exited(c.Nodes[i].done) && !c.Nodes[i].paused
}

func (c *Cluster) signal(i int, sig syscall.Signal) {
	c.mu.Lock()
	n := c.Nodes[i]
	cmd, done := n.cmd, n.done
	if cmd == nil {
		c.mu.Unlock()
		return
	}
	if sig == syscall.SIGKILL && n.paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	case syscall.SIGKILL:
		n.cmd, n.paused = nil, false
	}
	c.mu.Unlock()
	if sig == syscall.SIGKILL {
		<-done
	}
}

// Wipe removes node i's data directory (the node must not run).
func (c *Cluster) Wipe(i int) error { return os.RemoveAll(c.Nodes[i].DataDir) }

// SetLinks blocks or unblocks the given links.
func (c *Cluster) SetLinks(links []Link, blocked bool) {
	for _, l := range links {
		if p := c.proxies[l]; p != nil {
			p.SetBlocked(blocked)
		}
	}
}

// SetDelay delays the given links.
func (c *Cluster) SetDelay(links []Link, d time.Duration) {
	for _, l := range links {
		if p := c.proxies[l]; p != nil {
			p.SetDelay(d)
		}
	}
}

// HealNetwork unblocks and undelays every link.
func (c *Cluster) HealNetwork() {
	for _, p := range c.proxies {
		p.SetBlocked(false)
		p.SetDelay(0)
	}
}

// SetClockOffset shifts the wall clock node i stamps commands with.
func (c *Cluster) SetClockOffset(ctx context.Context, i int, d time.Duration) error {
	url := fmt.Sprintf("%s://%s/debug/faults/clock-offset?d=%s", c.adminScheme(), c.Nodes[i].HTTP, d)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	hc, err := c.adminClient()
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("clock offset on %s: HTTP %d", c.Nodes[i].ID, resp.StatusCode)
	}
	return nil
}

// Status asks node i for the cluster status.
func (c *Cluster) Status(ctx context.Context, i int, withHash bool) (*metadpb.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return c.clients[i].Cluster.Status(ctx, &metadpb.StatusRequest{WithHash: withHash})
}

// Leader returns the index of the leader as the first answering running
// node reports it, or -1.
func (c *Cluster) Leader(ctx context.Context) int {
	for i := range c.Nodes {
		if !c.Up(i) {
			continue
		}
		st, err := c.Status(ctx, i, false)
		if err != nil || st.LeaderId == "" {
			continue
		}
		if l := c.IndexOf(st.LeaderId); l >= 0 && c.Up(l) {
			return l
		}
	}
	return -1
}

// IndexOf maps a node id to its index (-1 if unknown).
func (c *Cluster) IndexOf(id string) int {
	for i, n := range c.Nodes {
		if n.ID == id {
			return i
		}
	}
	return -1
}

// Voters returns the ids of the voters node i reports, and the leader.
func (c *Cluster) Voters(ctx context.Context, i int) ([]string, string, error) {
	st, err := c.Status(ctx, i, false)
	if err != nil {
		return nil, "", err
	}
	var v []string
	for _, n := range st.Nodes {
		if n.Voter {
			v = append(v, n.NodeId)
		}
	}
	return v, st.LeaderId, nil
}

// RemovePeer removes node id from the Raft configuration, through node via.
func (c *Cluster) RemovePeer(ctx context.Context, via int, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := client.Call(ctx, c.clients[via], c.clients[via].Cluster.RemovePeer, &metadpb.RemovePeerRequest{NodeId: id})
	return err
}

// Close kills every node, unmounts their own filesystems (disk.go) and
// closes proxies and clients. It returns what it could not unmount.
func (c *Cluster) Close() error {
	for i := range c.Nodes {
		c.Kill(i)
	}
	err := errors.Join(c.unmountDisks(), c.unmountFaultFS())
	for _, p := range c.proxies {
		p.Close()
	}
	for _, cl := range c.clients {
		cl.Close()
	}
	c.Store.Close()
	return err
}

// Build compiles cmd/metad with the fault hooks and the state machine's
// invariants built in (checked as it applies: a broken one panics the
// server, and the run reports the crash) into dir and returns the binary's
// path.
func Build(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "metad")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "metad_faults,metad_invariants", "-o", bin, "./cmd/metad")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, b)
	}
	return bin, nil
}

// peerSecretFile is the secret the nodes share to call each other's
// node-to-node service without TLS.
func (c *Cluster) peerSecretFile() string { return filepath.Join(c.cfg.Dir, "peer-secret") }

func writePeerSecret(path string) error {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(hex.EncodeToString(b[:])+"\n"), 0o600)
}
