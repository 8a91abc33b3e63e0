package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/internal/weedtest"
	"github.com/metad/metad/objectstore"
)

// BenchmarkS3Read compares a broker's whole read — resolve (a pin, one
// Raft write unless shared) then a ranged GET by VersionId with If-Match —
// with the bare ranged GET of the same 4 KiB, at 1 and 16 concurrent
// callers (ns/op at c=16 is wall time per operation, the inverse of
// throughput), against weed mini and a 3-node cluster on loopback with
// shared pins (the default). Run:
//
//	go test ./integration/ -run '^$' -bench BenchmarkS3Read -benchtime 3s
func BenchmarkS3Read(b *testing.B) {
	weedtest.SetCredentials(b, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(b)
	w.Bucket(b, "metad", true)
	c := proc.New(b, 3)
	for _, nd := range c.Nodes {
		nd.Args = append(withoutObjectDir(nd.Args), s3Flags(w)...)
	}
	c.StartAll()
	c.WaitFor("a leader", 30*time.Second, func() bool { return c.Leader(0) >= 0 })
	store, err := objectstore.Open(context.Background(), w.StoreConfig("metad", "cluster"))
	if err != nil {
		b.Fatal(err)
	}
	br := newBrokerWithStore(b, c, "bench", store)
	payload := make([]byte, 1<<20)
	_, _ = rand.Read(payload)
	_, obj := br.append(100, payload, true)
	bareGet := func(p []byte) error {
		_, err := store.ReadAt(context.Background(), obj.Key, obj.Identity, p, 8192)
		return err
	}
	resolveGet := func(p []byte) error {
		resp, err := br.c.Resolve(context.Background(), br.stream, metadpb.View_COMMITTED, 7, nil)
		if err != nil || resp.Outcome != metadpb.Outcome_TARGET {
			return fmt.Errorf("resolve: %v %w", resp, err)
		}
		t := resp.Target
		_, err = store.ReadAt(context.Background(), t.Object.Key, t.Object.Identity, p, int64(t.Bytes.Offset)+8192)
		return err
	}
	for _, c := range []int{1, 16} {
		for _, op := range []struct {
			name string
			fn   func([]byte) error
		}{{"bare-ranged-get", bareGet}, {"resolve+ranged-get", resolveGet}} {
			b.Run(fmt.Sprintf("%s/c=%d", op.name, c), func(b *testing.B) { runConcurrently(b, c, op.fn) })
		}
	}
}

// runConcurrently runs fn b.N times over c goroutines, each with its own
// 4 KiB buffer.
func runConcurrently(b *testing.B, c int, fn func([]byte) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c)
	b.ResetTimer()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := make([]byte, 4096)
			for next.Add(1) <= int64(b.N) {
				if err := fn(p); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
