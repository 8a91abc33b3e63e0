package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/internal/waitfor"
	"github.com/metad/metad/objectstore"
)

// TestOneTracePerRequestAcrossForwarding: with tracing on, a CommitAppend
// sent to a follower is one trace — the follower's server span, its
// forward to the leader (client and server span of Peer/Propose) and the
// leader's raft.propose of the CommitAppend command under it — and a
// Resolve is one trace with its steps: the resolve, the linearizable
// reads of its plan and recheck, and the pin's proposal.
func TestOneTracePerRequestAcrossForwarding(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	secret := filepath.Join(t.TempDir(), "peer.secret")
	if err := os.WriteFile(secret, []byte("a peer secret of thirty-two bytes or more"), 0o600); err != nil {
		t.Fatal(err)
	}
	n1 := startTestNode(t, func(c *Config) { c.TraceExporter, c.Security.PeerSecretFile = exp, secret })
	n2 := startTestNode(t, func(c *Config) {
		c.NodeID, c.TraceExporter, c.Security.PeerSecretFile = "n2", exp, secret
		c.Membership.BootstrapExpect = 0
		c.Membership.Join = []string{n1.cfg.Membership.BindAddr}
		c.ObjectDir = filepath.Join(n1.cfg.DataDir, "objects")
	})
	if n2.store.IsLeader() {
		t.Fatal("n2 leads: the test needs it to forward")
	}
	conn, err := grpc.NewClient("passthrough:///"+n2.cfg.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m := metadpb.NewMetadClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	cs, err := m.CreateStream(ctx, &metadpb.CreateStreamRequest{Name: "traced", RequestId: "create-traced"})
	if err != nil {
		t.Fatal(err)
	}
	id := cs.StreamId
	open, err := m.OpenForWrite(ctx, &metadpb.OpenForWriteRequest{StreamId: id, RequestId: "open-traced"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.NewLocal(n2.cfg.ObjectDir)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("traced records")
	info, err := store.Put(ctx, "traced/0", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	obj := &metadpb.ObjectRef{Key: info.Key, Identity: info.Identity}
	if _, err := m.RegisterObject(ctx, &metadpb.RegisterObjectRequest{Object: obj, Size: uint64(info.Size), RequestId: "register-traced"}); err != nil {
		t.Fatal(err)
	}
	exp.Reset()
	if _, err := m.CommitAppend(ctx, &metadpb.CommitAppendRequest{StreamId: id, WriterEpoch: open.WriterEpoch, End: 1, Object: obj,
		Bytes: &metadpb.ByteRange{Length: uint64(len(payload))}, IndexGen0: true, RequestId: "append-traced",
		DataCrc32C: checksum.Of(payload).Ptr()}); err != nil {
		t.Fatal(err)
	}
	appendTrace := awaitTrace(t, exp, "metad.v1.Metad/CommitAppend", []string{
		"n2 metad.v1.Metad/CommitAppend", "n2 metad.v1.Peer/Propose", "n1 metad.v1.Peer/Propose", "n1 raft.propose"})
	if cmd := attribute(appendTrace, "raft.propose", "metad.command"); cmd != "commit_append" {
		t.Errorf("raft.propose names command %q, want commit_append", cmd)
	}
	t.Logf("a forwarded CommitAppend:\n%s", tree(appendTrace))

	exp.Reset()
	if _, err := m.Resolve(ctx, &metadpb.ResolveRequest{StreamId: id, View: metadpb.View_COMMITTED, Offset: 0}); err != nil {
		t.Fatal(err)
	}
	resolveTrace := awaitTrace(t, exp, "metad.v1.Metad/Resolve", []string{
		"n2 metad.v1.Metad/Resolve", "n2 resolve", "n2 raft.read", "n2 metad.v1.Peer/Propose", "n1 raft.propose"})
	if reads := count(resolveTrace, "raft.read"); reads < 2 {
		t.Errorf("resolve traced %d linearizable reads, want the plan's and the recheck's", reads)
	}
	if cmd := attribute(resolveTrace, "raft.propose", "metad.command"); cmd != "pin_object" {
		t.Errorf("the resolve's raft.propose names command %q, want pin_object", cmd)
	}
	t.Logf("a Resolve on a follower:\n%s", tree(resolveTrace))
}

// awaitTrace waits until the trace of the server span named root holds a
// span for each "node name" in want (servers end their spans after the
// caller has its answer), and returns the trace's spans.
func awaitTrace(t *testing.T, exp *tracetest.InMemoryExporter, root string, want []string) tracetest.SpanStubs {
	t.Helper()
	var tr tracetest.SpanStubs
	waitfor.Cond(t, 10*time.Second, "trace of "+root, func() error { // the exporter, which spans reach as servers end them
		tr = nil
		spans := exp.GetSpans()
		for _, s := range spans {
			if s.Name == root && s.SpanKind == trace.SpanKindServer {
				for _, o := range spans {
					if o.SpanContext.TraceID() == s.SpanContext.TraceID() {
						tr = append(tr, o)
					}
				}
				break
			}
		}
		var have []string
		for _, s := range tr {
			have = append(have, nodeOf(s)+" "+s.Name)
		}
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return slices.Contains(have, w) })
		if len(missing) == 0 {
			return nil
		}
		return fmt.Errorf("lacks %v; it has %v (of %d spans exported)", missing, have, len(spans))
	})
	return tr
}

func nodeOf(s tracetest.SpanStub) string {
	for _, kv := range s.Resource.Attributes() {
		if kv.Key == "service.instance.id" {
			return kv.Value.AsString()
		}
	}
	return "?"
}

func attribute(tr tracetest.SpanStubs, span, key string) string {
	for _, s := range tr {
		if s.Name != span {
			continue
		}
		for _, kv := range s.Attributes {
			if string(kv.Key) == key {
				return kv.Value.AsString()
			}
		}
	}
	return ""
}

func count(tr tracetest.SpanStubs, name string) int {
	n := 0
	for _, s := range tr {
		if s.Name == name {
			n++
		}
	}
	return n
}

// tree prints a trace as an indented tree: node, span, duration.
func tree(tr tracetest.SpanStubs) string {
	children := map[trace.SpanID][]tracetest.SpanStub{}
	ids := map[trace.SpanID]bool{}
	for _, s := range tr {
		ids[s.SpanContext.SpanID()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range tr {
		if p := s.Parent.SpanID(); ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		fmt.Fprintf(&b, "%s%s %s %v\n", strings.Repeat("  ", depth), nodeOf(s), s.Name, s.EndTime.Sub(s.StartTime).Round(time.Microsecond))
		kids := children[s.SpanContext.SpanID()]
		slices.SortFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}
