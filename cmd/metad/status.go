package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
)

func newStatusCmd(o *clientOpts) *cobra.Command {
	var withHash bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every server of the cluster: state, term, indexes, last contact, quorum",
		Long: `Show every server of the Raft configuration as the answering member sees it,
and whether the cluster can serve: the leader (or NO LEADER), how many voters
are healthy (reachable, and leading or following the current leader), the
quorum, and how many more failures the cluster survives (or NO QUORUM).
The exit status is 0 when the cluster can serve, 4 with NO LEADER or NO
QUORUM (the table is printed either way).
Unreachable servers show their gRPC address and why they did not answer.
State hashes (--hash) are hex everywhere, as in metad snapshot diff.`,
		Example: `  metad status
  metad status --addr 127.0.0.1:7430 -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				st, hashes, err := clusterStatus(ctx, c, withHash)
				if err != nil {
					return err
				}
				fillUnreachableAddrs(ctx, c, st)
				h := judgeCluster(st)
				if o.output == "json" {
					if err := statusJSON(cmd.OutOrStdout(), st, hashes, h); err != nil {
						return err
					}
					return h.verdict(st.LeaderId)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				statusTable(tw, st, hashes, h)
				if err := tw.Flush(); err != nil {
					return err
				}
				return h.verdict(st.LeaderId)
			})
		},
	}
	cmd.Flags().BoolVar(&withHash, "hash", false, "also show each node's state hash (O(state) per node)")
	return cmd
}

// stateHash is one node's state hash and the index of the last command
// it covers (the state machine's, which is not Raft's applied index: Raft
// also applies no-ops and configuration changes).
type stateHash struct {
	Hex          string `json:"hex"`
	CommandIndex uint64 `json:"command_index"`
}

// clusterStatus asks for the status, and with withHash for the state
// hashes in a second call: a hashed status reports the hash's command
// index as the applied index, and the APPLIED column must mean one thing
// with or without --hash.
func clusterStatus(ctx context.Context, c *client.Client, withHash bool) (*metadpb.StatusResponse, map[string]stateHash, error) {
	st, err := client.Call(ctx, c, c.Cluster.Status, &metadpb.StatusRequest{})
	if err != nil || !withHash {
		return st, nil, err
	}
	hashed, err := client.Call(ctx, c, c.Cluster.Status, &metadpb.StatusRequest{WithHash: true})
	if err != nil {
		return nil, nil, err
	}
	hashes := map[string]stateHash{}
	for _, n := range hashed.Nodes {
		if len(n.StateHash) > 0 {
			hashes[n.NodeId] = stateHash{Hex: hex.EncodeToString(n.StateHash), CommandIndex: n.AppliedIndex}
		}
	}
	return st, hashes, nil
}

// clusterHealth is what the status summary line says.
type clusterHealth struct {
	Voters, Healthy, Quorum uint32
	// Tolerates is how many more voters may fail before quorum is lost;
	// meaningful only with a quorum.
	Tolerates uint32
	NoLeader  bool
	NoQuorum  bool
}

// judgeCluster counts the voters that can take part in a quorum now: those
// that answered and lead, or follow the leader the answering member knows.
// The configuration's size says what the cluster could tolerate when all
// are well, which is not what it tolerates now.
func judgeCluster(st *metadpb.StatusResponse) clusterHealth {
	h := clusterHealth{NoLeader: st.LeaderId == ""}
	for _, n := range st.Nodes {
		if !n.Voter {
			continue
		}
		h.Voters++
		if healthyVoter(n, st.LeaderId) {
			h.Healthy++
		}
	}
	h.Quorum = h.Voters/2 + 1
	h.NoQuorum = h.Healthy < h.Quorum
	if !h.NoQuorum {
		h.Tolerates = h.Healthy - h.Quorum
	}
	return h
}

// healthyVoter: reachable, and either the leader or a follower of it.
// Without a leader, a reachable voter still counts toward the quorum an
// election needs.
func healthyVoter(n *metadpb.NodeStatus, leader string) bool {
	if n.Error != "" {
		return false
	}
	if leader == "" {
		return n.State == "Follower" || n.State == "Candidate"
	}
	return (n.State == "Leader" && n.NodeId == leader) || (n.State == "Follower" && n.LeaderId == leader)
}

// verdict is the exit of a status or health check: nil when the cluster
// can serve, errUnhealthy (exit 4) without a leader or a quorum.
func (h clusterHealth) verdict(leader string) error {
	if h.NoLeader || h.NoQuorum {
		return fmt.Errorf("%w: %s", errUnhealthy, h.summary(leader))
	}
	return nil
}

func (h clusterHealth) summary(leader string) string {
	who := "leader " + leader
	if h.NoLeader {
		who = "NO LEADER"
	}
	line := fmt.Sprintf("%s; %d voters, %d healthy, quorum %d", who, h.Voters, h.Healthy, h.Quorum)
	if h.NoQuorum {
		return line + fmt.Sprintf(": NO QUORUM, writes and reads stop until %d more voter(s) return", h.Quorum-h.Healthy)
	}
	if h.NoLeader {
		return line + ": an election is under way (writes and reads wait for it)"
	}
	return line + fmt.Sprintf(", tolerates %d more failure(s)", h.Tolerates)
}

func statusTable(tw *tabwriter.Writer, st *metadpb.StatusResponse, hashes map[string]stateHash, h clusterHealth) {
	header := "NODE\tID\tADDRESS\tSTATE\tVOTER\tTERM\tCOMMIT\tAPPLIED\tLAST CONTACT\tLOG STORE"
	if hashes != nil {
		header += "\tSTATE HASH\tAT COMMAND"
	}
	fmt.Fprintln(tw, header)
	for i, n := range st.Nodes {
		line := fmt.Sprintf("%d\t%s\t%s\t%s\t%v\t%d\t%d\t%d\t%s\t%s", i+1, n.NodeId, orDash(n.GrpcAddr), n.State, n.Voter,
			n.Term, n.CommitIndex, n.AppliedIndex, lastContact(n), orDash(n.RaftLogStore))
		if n.Error != "" {
			line = fmt.Sprintf("%d\t%s\t%s\t%s\t%v\t-\t-\t-\t%s\t-", i+1, n.NodeId, orDash(n.GrpcAddr), n.State, n.Voter, shortReason(n.Error))
		}
		if hashes != nil {
			if sh, ok := hashes[n.NodeId]; ok {
				line += fmt.Sprintf("\t%s\t%d", sh.Hex, sh.CommandIndex)
			} else {
				line += "\t-\t-"
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintf(tw, "\n%s\n", h.summary(st.LeaderId))
	for _, n := range st.Nodes {
		if n.Disk != "" { // README: Disk faults
			fmt.Fprintf(tw, "%s: %s\n", n.NodeId, n.Disk)
		}
	}
	if st.ClusterFeatureLevel > 0 {
		fmt.Fprintf(tw, "cluster feature level %d (README: Upgrading)\n", st.ClusterFeatureLevel)
	}
	if st.ClusterId != "" {
		fmt.Fprintf(tw, "cluster id %s\n", st.ClusterId)
	} else {
		fmt.Fprintln(tw, "cluster id none yet (set once the cluster reaches feature level 2)")
	}
	tombstoneTable(tw, st.Tombstones)
}

func lastContact(n *metadpb.NodeStatus) string {
	switch {
	case n.State == "Leader":
		return "leader"
	case n.SinceLastContact != nil && n.SinceLastContact.AsDuration() >= 0:
		return n.SinceLastContact.AsDuration().Round(time.Millisecond).String()
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortReason turns a peer call's error (a gRPC status rendered as text,
// with its nested transport descriptions) into what an operator needs:
// "connection refused", "no answer in time", or the innermost message.
func shortReason(err string) string {
	for _, known := range []struct{ contains, say string }{
		{"connection refused", "unreachable: connection refused"},
		{"DeadlineExceeded", "unreachable: no answer in time"},
		{"deadline exceeded", "unreachable: no answer in time"},
		{"no route to host", "unreachable: no route to host"},
		{"unknown node", "unreachable: gRPC address unknown (not in gossip)"},
	} {
		if strings.Contains(err, known.contains) {
			return known.say
		}
	}
	if i := strings.LastIndex(err, "desc = "); i >= 0 {
		err = strings.Trim(err[i+len("desc = "):], `"`)
	}
	return "unreachable: " + err
}

// fillUnreachableAddrs gives rows that did not answer the gRPC address the
// gossip view knows (the Raft address is not where an operator can reach
// the server). Best effort: without an answer the column shows "-".
func fillUnreachableAddrs(ctx context.Context, c *client.Client, st *metadpb.StatusResponse) {
	missing := false
	for _, n := range st.Nodes {
		missing = missing || n.GrpcAddr == ""
	}
	if !missing {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	members, err := c.Cluster.Members(ctx, &metadpb.MembersRequest{})
	if err != nil {
		return
	}
	grpcOf := map[string]string{}
	for _, m := range members.Members {
		grpcOf[m.NodeId] = m.GrpcAddr
	}
	for _, n := range st.Nodes {
		if n.GrpcAddr == "" {
			n.GrpcAddr = grpcOf[n.NodeId]
		}
	}
}

// statusJSON is the response as protojson prints it, with the state hashes
// in hex (protojson would print bytes as base64) and the index of the last
// command each covers, and the health judgement replacing the
// configuration-size failure tolerance.
func statusJSON(w io.Writer, st *metadpb.StatusResponse, hashes map[string]stateHash, h clusterHealth) error {
	v, err := protoJSONValue(st)
	if err != nil {
		return err
	}
	out, _ := v.(map[string]any)
	nodes, _ := out["nodes"].([]any)
	for i, n := range nodes {
		m, ok := n.(map[string]any)
		if !ok {
			continue
		}
		delete(m, "state_hash")
		if sh, ok := hashes[st.Nodes[i].NodeId]; ok {
			m["state_hash"], m["state_hash_command_index"] = sh.Hex, sh.CommandIndex
		}
	}
	out["failure_tolerance"] = h.Tolerates
	out["healthy_voters"] = h.Healthy
	out["no_leader"] = h.NoLeader
	out["no_quorum"] = h.NoQuorum
	out["summary"] = h.summary(st.LeaderId)
	return writeJSON(w, out)
}
