package api

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
)

func TestRPCMetricsCountCodesPerMethod(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewRPCMetrics(reg, nil)
	info := &grpc.UnaryServerInfo{FullMethod: "/metad.v1.Metad/Resolve"}
	ok := func(context.Context, any) (any, error) { return "ok", nil }
	unavailable := func(context.Context, any) (any, error) { return nil, status.Error(codes.Unavailable, "no leader") }
	for range 3 {
		_, _ = m.unary(context.Background(), nil, info, ok)
	}
	_, _ = m.unary(context.Background(), nil, info, unavailable)
	_ = m.stream(nil, nil, &grpc.StreamServerInfo{FullMethod: "/metad.v1.Cluster/Snapshot", IsServerStream: true},
		func(any, grpc.ServerStream) error { return errors.New("plain error") })

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"metad.v1.Metad", "Resolve", "unary", "OK"}, 3},
		{[]string{"metad.v1.Metad", "Resolve", "unary", "Unavailable"}, 1},
		{[]string{"metad.v1.Cluster", "Snapshot", "server_stream", "Unknown"}, 1},
	} {
		if got := counterValue(t, m.handled.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("handled%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if n := seriesCount(t, m.seconds); n != 2 {
		t.Errorf("%d latency series, want 2", n)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

func TestRPCMetricsInitializeEveryMethod(t *testing.T) {
	m := NewRPCMetrics(nil, nil)
	g := grpc.NewServer()
	metadpb.RegisterClusterServer(g, metadpb.UnimplementedClusterServer{})
	m.Initialize(g)
	want := len(metadpb.Cluster_ServiceDesc.Methods) + len(metadpb.Cluster_ServiceDesc.Streams)
	if n := seriesCount(t, m.handled); n != want {
		t.Errorf("%d series after Initialize, want %d (one per method)", n, want)
	}
	if got := counterValue(t, m.handled.WithLabelValues("metad.v1.Cluster", "Snapshot", "server_stream", "OK")); got != 0 {
		t.Errorf("initialised series = %v", got)
	}
}

func TestChunkWriterCutsAtCapacity(t *testing.T) {
	var chunks [][]byte
	w := &chunkWriter{buf: make([]byte, 0, 4), send: func(c *metadpb.SnapshotChunk) error {
		chunks = append(chunks, c.Data)
		return nil
	}}
	for _, p := range []string{"ab", "cdefghij", "k"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if got := bytes.Join(chunks, []byte("|")); string(got) != "abcd|efgh|ijk" {
		t.Errorf("chunks %q", got)
	}
	failing := &chunkWriter{buf: make([]byte, 0, 2), send: func(*metadpb.SnapshotChunk) error { return errors.New("gone") }}
	if n, err := failing.Write([]byte("abc")); err == nil || n != 2 {
		t.Errorf("failing send: %d, %v", n, err)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func seriesCount(t *testing.T, c prometheus.Collector) int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		n += len(f.Metric)
	}
	return n
}
