package tracing

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestStartFollowsTheCallersSpan: Start records a child of a recording
// span, with its provider, and marks a failure; without one it records
// nothing, so layers below gRPC trace only traced calls.
func TestStartFollowsTheCallersSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p, err := New(context.Background(), Config{SampleRatio: 1, NodeID: "n1"}, exp)
	if err != nil {
		t.Fatal(err)
	}
	_, end := Start(context.Background(), "untraced")
	end(nil)
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("a span without a traced caller was recorded (%d)", n)
	}
	ctx, root := p.tp.Tracer("test").Start(context.Background(), "call")
	_, end = Start(ctx, "raft.propose", String("metad.command", "trim"))
	end(errors.New("leadership lost"))
	root.End()
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "raft.propose" || spans[0].Parent.SpanID() != spans[1].SpanContext.SpanID() {
		t.Fatalf("spans = %+v, want raft.propose under call", spans)
	}
	if spans[0].Status.Description != "leadership lost" {
		t.Errorf("failed span's status = %+v", spans[0].Status)
	}
}

// TestConfigNamesItsFlag: a sample ratio outside [0, 1] is refused naming
// --trace-sample-ratio; tracing is off without an endpoint.
func TestConfigNamesItsFlag(t *testing.T) {
	if err := (Config{SampleRatio: 1.5}).Validate(); err == nil || err.Error() != "--trace-sample-ratio 1.5 outside [0, 1]" {
		t.Errorf("Validate = %v", err)
	}
	p, err := New(context.Background(), DefaultConfig(), nil)
	if err != nil || p.on {
		t.Errorf("default config: on=%v err=%v, want tracing off", p != nil && p.on, err)
	}
}
