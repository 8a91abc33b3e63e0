package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// otlpCollector is an OTLP/gRPC trace receiver in the test, so that the
// README's trace sample comes from real servers exporting as an
// operator's collector would receive them.
type otlpCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans []otlpSpan
}

// otlpSpan is one received span and the node (service.instance.id) that
// sent it.
type otlpSpan struct {
	node string
	span *tracepb.Span
}

func startOTLPCollector(t *testing.T) *otlpCollector {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &otlpCollector{addr: lis.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return c
}

func (c *otlpCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		node := "?"
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.instance.id" {
				node = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, otlpSpan{node, s})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// trace returns the spans of the newest trace whose server span on node is
// named root.
func (c *otlpCollector) trace(node, root string) []otlpSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var id []byte
	for _, s := range c.spans {
		if s.node == node && s.span.Name == root && s.span.Kind == tracepb.Span_SPAN_KIND_SERVER {
			id = s.span.TraceId
		}
	}
	var tr []otlpSpan
	for _, s := range c.spans {
		if id != nil && string(s.span.TraceId) == string(id) {
			tr = append(tr, s)
		}
	}
	return tr
}

// traceTree prints a trace as an indented tree: node, span, duration (as
// the node package's TestOneTracePerRequestAcrossForwarding logs it).
func traceTree(tr []otlpSpan) string {
	ids := map[string]bool{}
	for _, s := range tr {
		ids[string(s.span.SpanId)] = true
	}
	children := map[string][]otlpSpan{}
	var roots []otlpSpan
	for _, s := range tr {
		if p := string(s.span.ParentSpanId); ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s otlpSpan, depth int)
	walk = func(s otlpSpan, depth int) {
		d := time.Duration(s.span.EndTimeUnixNano - s.span.StartTimeUnixNano).Round(time.Microsecond)
		fmt.Fprintf(&b, "%s%s %s %v\n", strings.Repeat("  ", depth), s.node, s.span.Name, d)
		kids := children[string(s.span.SpanId)]
		slices.SortFunc(kids, func(a, b otlpSpan) int { return int(a.span.StartTimeUnixNano) - int(b.span.StartTimeUnixNano) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// produceTrace: the trace of one CommitAppend that `metad append` sends to
// a follower, which forwards it to the leader.
func produceTrace(t *testing.T, e *sampleEnv) string {
	c := e.cluster(t)
	leader := c.WaitLeader(0)
	follower := (leader + 1) % len(c.Nodes)
	e.cli(t, follower, "stream", "create", "traced")
	e.cli(t, follower, "append", "traced", "--data", "hello")
	var tr []otlpSpan
	c.WaitFor("the CommitAppend's trace", 30*time.Second, func() bool { // servers export their spans in batches
		tr = e.traces.trace(c.Nodes[follower].ID, "metad.v1.Metad/CommitAppend")
		tree := traceTree(tr)
		return strings.Contains(tree, c.Nodes[leader].ID+" metad.v1.Peer/Propose") && strings.Contains(tree, " raft.propose ")
	})
	return traceTree(tr)
}
