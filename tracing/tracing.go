package tracing

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
)

// Config is the tracing of one server.
type Config struct {
	// Endpoint is the OTLP/gRPC collector (host:port); "" turns tracing
	// off. Flag --otlp-endpoint.
	Endpoint string
	// Insecure sends spans without TLS (a collector on the same host).
	// Flag --otlp-insecure.
	Insecure bool
	// SampleRatio is the share of new traces recorded, in [0, 1]; a call
	// whose caller sampled it is always recorded. Flag --trace-sample-ratio.
	SampleRatio float64
	// NodeID names the server in every span (service.instance.id).
	NodeID string
}

// DefaultConfig is tracing off, one trace in a hundred once it is on.
func DefaultConfig() Config { return Config{SampleRatio: 0.01} }

// Validate names the flag at fault.
func (c Config) Validate() error {
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("--trace-sample-ratio %v outside [0, 1]", c.SampleRatio)
	}
	return nil
}

// Exporter receives finished spans: for tests, the SDK's in-memory
// exporter (Config.Endpoint is then ignored).
type Exporter = sdktrace.SpanExporter

// Provider is the tracer provider of one server.
type Provider struct {
	tp       trace.TracerProvider
	shutdown func(context.Context) error
	// on: spans are recorded somewhere. Off, the gRPC options add nothing,
	// so an untraced server pays nothing per call.
	on bool
}

// New returns the Provider cfg describes: a no-op one when cfg.Endpoint is
// empty and exp is nil. A non-nil exp (a test's in-memory exporter)
// receives the spans instead of an OTLP collector, synchronously, every
// trace sampled.
func New(ctx context.Context, cfg Config, exp Exporter) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Endpoint == "" && exp == nil {
		return &Provider{tp: noop.NewTracerProvider(), shutdown: func(context.Context) error { return nil }}, nil
	}
	res := resource.NewSchemaless(attribute.String("service.name", "metad"), attribute.String("service.instance.id", cfg.NodeID))
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if exp != nil {
		opts = append(opts, sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	} else {
		copts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(cfg.Endpoint)}
		if cfg.Insecure {
			copts = append(copts, otlptracegrpc.WithInsecure())
		}
		// The exporter connects lazily: a collector down at start costs
		// dropped spans, never a refused start.
		otlp, err := otlptracegrpc.New(ctx, copts...)
		if err != nil {
			return nil, fmt.Errorf("--otlp-endpoint %s: %w", cfg.Endpoint, err)
		}
		opts = append(opts, sdktrace.WithBatcher(otlp),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &Provider{tp: tp, shutdown: tp.Shutdown, on: true}, nil
}

// propagator carries the W3C trace context across gRPC hops.
var propagator = propagation.TraceContext{}

// ServerOption traces every call a gRPC server serves. A nil Provider
// (a node only validating its settings) traces nothing, as does one off.
func (p *Provider) ServerOption() grpc.ServerOption {
	if p == nil || !p.on {
		return grpc.EmptyServerOption{}
	}
	return grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(p.tp), otelgrpc.WithPropagators(propagator)))
}

// DialOption traces every call a gRPC client makes, carrying the trace on.
func (p *Provider) DialOption() grpc.DialOption {
	if p == nil || !p.on {
		return grpc.EmptyDialOption{}
	}
	return grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(p.tp), otelgrpc.WithPropagators(propagator)))
}

// Shutdown flushes the spans still buffered and stops exporting.
func (p *Provider) Shutdown(ctx context.Context) error {
	if err := p.shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracing: %w", err)
	}
	return nil
}

// Start opens a span named name as a child of the span in ctx, with that
// span's provider; without a recording span in ctx it records nothing.
// The returned end closes the span, marking it failed when err is not nil.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(err error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, func(error) {}
	}
	ctx, span := parent.TracerProvider().Tracer("github.com/metad/metad").Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// Int names an integer attribute of a span.
func Int(key string, v uint64) attribute.KeyValue { return attribute.Int64(key, int64(v)) }

// String names a string attribute of a span.
func String(key, v string) attribute.KeyValue { return attribute.String(key, v) }
