package raftstore

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's own series. Raft's (raft_commitTime,
// raft_fsm_apply, raft_leader_lastContact, raft_snapshot_*, ...) reach
// Prometheus through the go-metrics bridge that package node installs;
// these add what only this package knows: the ReadIndex protocol, the
// applied index of the state machine (not raft's), and end-to-end
// latencies as callers see them.
type metrics struct {
	leaderChanges prometheus.Counter
	applySeconds  prometheus.Histogram
	readSeconds   prometheus.Histogram
	readBatch     prometheus.Histogram
	readRounds    *prometheus.CounterVec
}

// latencyBuckets span 0.25 ms to about 4 s: a commit on loopback takes a
// fraction of a millisecond, a leader change a few seconds.
var latencyBuckets = prometheus.ExponentialBuckets(0.00025, 2, 15)

// newMetrics declares the store's metrics, unregistered: the store records
// from Open, and RegisterMetrics exposes them.
func newMetrics() *metrics {
	return &metrics{
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_raft_leader_changes_total",
			Help: "Times this node saw a new leader (a different server, or the same one in a new term).",
		}),
		applySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_raft_apply_duration_seconds",
			Help:    "Propose on the leader, from handing the command to raft until raft resolved it (committed and applied, or failed).",
			Buckets: latencyBuckets,
		}),
		readSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_raft_read_duration_seconds",
			Help:    "Successful linearizable reads (Read): read index, wait until applied, run the read.",
			Buckets: latencyBuckets,
		}),
		readBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_raft_readindex_batch_reads",
			Help:    "Reads served by one leadership-confirmation round of the ReadIndex protocol (the batching factor).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		readRounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_raft_readindex_rounds_total",
			Help: "Leadership-confirmation rounds run by this node as leader, by result (confirmed or failed).",
		}, []string{"result"}),
	}
}

// RegisterMetrics registers the store's metrics with reg: the counters and
// histograms above, and gauges read from the store at scrape time. Call it
// once per store.
func (s *Store) RegisterMetrics(reg prometheus.Registerer) error {
	m := s.metrics
	m.readRounds.WithLabelValues("confirmed")
	m.readRounds.WithLabelValues("failed")
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	cs := []prometheus.Collector{
		m.leaderChanges, m.applySeconds, m.readSeconds, m.readBatch, m.readRounds,
		gauge("metad_raft_commit_index", "Highest log index this node knows to be committed.",
			func() float64 { return float64(s.raft.CommitIndex()) }),
		gauge("metad_raft_applied_index", "Highest log index the state machine reflects (readable now; not raft's AppliedIndex).",
			func() float64 { return float64(s.AppliedIndex()) }),
		gauge("metad_raft_last_log_index", "Index of the last entry in this node's log.",
			func() float64 { return float64(s.raft.LastIndex()) }),
		gauge("metad_state_disk_bytes", "Bytes the state store (the state machine's state on disk) takes on disk.",
			func() float64 { return float64(s.fsm.stateStats().DiskBytes) }),
		gauge("metad_state_cache_bytes", "Bytes in the state store's block cache (at most --state-cache).",
			func() float64 { return float64(s.fsm.stateStats().CacheBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "metad_state_cache_hits_total",
			Help: "Reads of the state store served from its block cache (a store rebuilt from a snapshot starts again from 0)."},
			func() float64 { return float64(s.fsm.stateStats().CacheHits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "metad_state_cache_misses_total",
			Help: "Reads of the state store that missed its block cache and read the disk."},
			func() float64 { return float64(s.fsm.stateStats().CacheMisses) }),
		gauge("metad_raft_term", "This node's current raft term.",
			func() float64 { return float64(s.raft.CurrentTerm()) }),
		gauge("metad_raft_leader", "1 while this node is the leader and its term's barrier is applied (serving linearizable reads), else 0.",
			func() float64 {
				if _, err := s.leaderReady(); err != nil {
					return 0
				}
				return 1
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "metad_raft_log_store",
			Help:        "1, labelled with the log store this node's raft log lives in (bolt or wal).",
			ConstLabels: prometheus.Labels{"store": string(s.disk.kind)},
		}, func() float64 { return 1 }),
		gauge("metad_raft_pending_proposals", "Proposals waiting for raft to resolve them (bound: MaxPendingProposals).",
			func() float64 { return float64(len(s.proposals)) }),
		gauge("metad_raft_waiting_reads", "Reads queued for the next confirmation round (bound: MaxWaitingReads).",
			func() float64 { return float64(len(s.reads)) }),
	}
	var errs []error
	for _, c := range cs {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
