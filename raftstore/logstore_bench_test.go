package raftstore

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Log store benchmarks (they run only with -bench), bolt next to wal:
//
//	go test -run='^$' -bench='StoreLogs|CommitLatency' -benchtime=2000x ./raftstore/
//
// BenchmarkStoreLogs is the disk floor of one write: one 160-byte entry
// stored (and fsynced) per op, as a leader or follower does at
// concurrency 1. BenchmarkCommitLatency is a whole commit at concurrency
// 1: three stores opened as in production (Open: TCP transport on
// loopback, files in a temporary dir), one proposal at a time on the
// leader, with p50 and p99 reported.

func BenchmarkStoreLogs(b *testing.B) {
	for _, kind := range LogStores {
		b.Run(string(kind), func(b *testing.B) {
			d, err := openDisk(b.TempDir(), diskOptions{want: kind, create: true, record: true})
			if err != nil {
				b.Fatal(err)
			}
			defer d.close()
			data := make([]byte, 160)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := range b.N {
				l := &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}
				if err := d.log.StoreLogs([]*raft.Log{l}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCommitLatency(b *testing.B) {
	for _, kind := range LogStores {
		b.Run(string(kind), func(b *testing.B) {
			c := tcpCluster(b, 3, func(cfg *Config) {
				cfg.LogStore = kind
				cfg.HeartbeatTimeout = 500 * time.Millisecond // the production timings
				cfg.ElectionTimeout = time.Second
				cfg.LeaderLeaseTimeout = 500 * time.Millisecond
			})
			l := c.leader()
			c.propose(createStream("warm"))
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				res, err := l.Propose(context.Background(), createStream(fmt.Sprintf("s%d", i)))
				if err != nil || res.Rejection != nil {
					b.Fatalf("propose: %v %v", res, err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// tcpCluster opens n stores through Open (TCP transport on loopback) in a
// temporary dir, bootstraps them and waits for a leader.
func tcpCluster(tb testing.TB, n int, tweak func(*Config)) *testCluster {
	c := &testCluster{t: tb, net: &testNet{cut: map[[2]string]bool{}, peerCut: map[[2]string]bool{}}, logger: testLogger(tb)}
	tb.Cleanup(c.closeAll)
	dir := tb.TempDir()
	var servers []Server
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		node := &testNode{id: id, cfg: testConfig(id, filepath.Join(dir, id))}
		if tweak != nil {
			tweak(&node.cfg)
		}
		c.nodes = append(c.nodes, node)
		s, err := Open(node.cfg, &testPeers{c: c, self: id}, c.logger)
		if err != nil {
			tb.Fatalf("open %s: %v", id, err)
		}
		node.store.Store(s)
		servers = append(servers, Server{ID: id, Address: s.Addr()})
	}
	if err := c.store(0).Bootstrap(servers); err != nil {
		tb.Fatal(err)
	}
	c.leader()
	return c
}
