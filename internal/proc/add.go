package proc

import (
	"fmt"
	"path/filepath"
)

// AddNode prepares (without starting) one more server that joins the
// others with --bootstrap-expect 0: it forms nothing and waits for the
// leader to add it. extra flags are added to its command line. It returns
// the new server's index.
func (c *Cluster) AddNode(extra ...string) int {
	c.t.Helper()
	i := len(c.Nodes)
	nd := &Node{
		ID: fmt.Sprintf("n%d", i+1), GRPC: FreePort(c.t), Raft: FreePort(c.t), Gossip: FreePort(c.t), HTTP: FreePort(c.t),
		DataDir: filepath.Join(c.Dir, fmt.Sprintf("n%d", i+1)),
	}
	nd.Args = []string{"server", "--node-id", nd.ID, "--data-dir", nd.DataDir, "--grpc-addr", nd.GRPC,
		"--raft-addr", nd.Raft, "--gossip-addr", nd.Gossip, "--http-addr", nd.HTTP,
		"--bootstrap-expect", "0", "--object-dir", filepath.Join(c.Dir, "objects"),
		"--peer-secret-file", filepath.Join(c.Dir, "peer-secret")}
	for _, other := range c.Nodes {
		nd.Args = append(nd.Args, "--join", other.Gossip)
	}
	nd.Args = append(nd.Args, extra...)
	nd.logPath = filepath.Join(c.Dir, nd.ID+".log")
	c.Nodes = append(c.Nodes, nd)
	return i
}
