package readpath

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/resolver"
)

// TestResolverOverOneNode resolves over a real one-voter Raft store: an
// unknown stream is NOT_FOUND, the cache lookup before it is counted, and
// the read path's metrics keep their names.
func TestResolverOverOneNode(t *testing.T) {
	raft := openAlone(t)
	reg := prometheus.NewRegistry()
	rep, err := repair.New(repair.DefaultConfig(), NewStore[repair.State](raft), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(DefaultConfig(), Deps{
		Store: raft, Propose: raft.Propose, Repair: rep,
		RepairOnLeader: func(context.Context, string, uint64, uint64) error { return errors.New("no other node") },
		Metrics:        reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.Resolve(ctx, resolver.Request{Stream: 99, View: fsm.Committed})
	if err != nil || res.Outcome != resolver.NotFound {
		t.Fatalf("resolve of an unknown stream: %v %v, want NOT_FOUND", res.Outcome, err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, want := range []string{"metad_resolve_cache_total", "metad_pins_held", "metad_pins_oldest_age_seconds"} {
		if !names[want] {
			t.Errorf("metric %s not registered (have %v)", want, names)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for _, margin := range []time.Duration{-time.Nanosecond, time.Minute + time.Nanosecond} {
		c := DefaultConfig()
		c.LeaseMargin = margin
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "LeaseMargin") {
			t.Errorf("LeaseMargin %s: %v, want a refusal naming it", margin, err)
		}
	}
	c := DefaultConfig()
	c.Resolver = resolver.Config{}
	if err := c.Validate(); err == nil {
		t.Error("a zero resolver configuration accepted")
	}
}
