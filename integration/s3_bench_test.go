package integration

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/internal/weedtest"
	"github.com/metad/metad/objectstore"
)

// BenchmarkS3Read compares a broker's whole read — resolve (a pin, one
// Raft write unless shared) then a ranged GET by VersionId with If-Match —
// with the bare ranged GET of the same 4 KiB, against weed mini and a
// 3-node cluster on loopback. Run:
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
	const size = 4096
	b.Run("bare-ranged-get", func(b *testing.B) {
		p := make([]byte, size)
		for b.Loop() {
			if _, err := store.ReadAt(context.Background(), obj.Key, obj.Identity, p, 8192); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("resolve+ranged-get", func(b *testing.B) {
		p := make([]byte, size)
		for b.Loop() {
			resp, err := br.c.Resolve(context.Background(), br.stream, metadpb.View_COMMITTED, 7, nil)
			if err != nil || resp.Outcome != metadpb.Outcome_TARGET {
				b.Fatalf("resolve: %v %v", resp, err)
			}
			t := resp.Target
			if _, err := store.ReadAt(context.Background(), t.Object.Key, t.Object.Identity, p, int64(t.Bytes.Offset)+8192); err != nil {
				b.Fatal(err)
			}
		}
	})
}
