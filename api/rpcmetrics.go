package api

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/clock"
)

// RPCMetrics counts and times every call the gRPC server handles, per
// service, method and code, with the label names of go-grpc-prometheus so
// that existing dashboards need only the metric names changed.
type RPCMetrics struct {
	handled *prometheus.CounterVec
	seconds *prometheus.HistogramVec
	clock   clock.Clock // times the calls
}

// rpcBuckets span 0.25 ms to about 8 s (calls wait up to their deadline,
// 10 s by default).
var rpcBuckets = prometheus.ExponentialBuckets(0.00025, 2, 16)

// NewRPCMetrics declares the RPC metrics and registers them with reg (nil:
// unregistered); clk times the calls (nil: clock.Real).
func NewRPCMetrics(reg prometheus.Registerer, clk clock.Clock) *RPCMetrics {
	if clk == nil {
		clk = clock.Real
	}
	m := &RPCMetrics{
		clock: clk,
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_grpc_server_handled_total",
			Help: "gRPC calls completed by this server, by service, method, type and status code.",
		}, []string{"grpc_service", "grpc_method", "grpc_type", "grpc_code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "metad_grpc_server_handling_seconds",
			Help:    "Time this server took to complete gRPC calls (whole streams for streaming calls), by service and method.",
			Buckets: rpcBuckets,
		}, []string{"grpc_service", "grpc_method", "grpc_type"}),
	}
	if reg != nil {
		reg.MustRegister(m.handled, m.seconds)
	}
	return m
}

// ServerOptions are the interceptors; put them before the API's own
// (Server.ServerOptions) so that a call's final code is counted, including
// INTERNAL for a handler that panicked.
func (m *RPCMetrics) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.unary),
		grpc.ChainStreamInterceptor(m.stream),
	}
}

// Initialize creates the series of every method registered on g with code
// OK at zero, so that a scrape shows every method before its first call.
func (m *RPCMetrics) Initialize(g *grpc.Server) {
	for svc, info := range g.GetServiceInfo() {
		for _, method := range info.Methods {
			typ := rpcType(method.IsClientStream, method.IsServerStream)
			m.handled.WithLabelValues(svc, method.Name, typ, codes.OK.String())
			m.seconds.WithLabelValues(svc, method.Name, typ)
		}
	}
}

func (m *RPCMetrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := m.clock.Now()
	resp, err := h(ctx, req)
	m.observe(info.FullMethod, "unary", start, err)
	return resp, err
}

func (m *RPCMetrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	start := m.clock.Now()
	err := h(srv, ss)
	m.observe(info.FullMethod, rpcType(info.IsClientStream, info.IsServerStream), start, err)
	return err
}

func (m *RPCMetrics) observe(fullMethod, typ string, start time.Time, err error) {
	svc, method := splitMethod(fullMethod)
	m.seconds.WithLabelValues(svc, method, typ).Observe(clock.Since(m.clock, start).Seconds())
	m.handled.WithLabelValues(svc, method, typ, status.Code(err).String()).Inc()
}

// splitMethod splits "/pkg.Service/Method".
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndex(full, "/"); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", full
}

func rpcType(clientStream, serverStream bool) string {
	switch {
	case clientStream && serverStream:
		return "bidi_stream"
	case clientStream:
		return "client_stream"
	case serverStream:
		return "server_stream"
	}
	return "unary"
}
