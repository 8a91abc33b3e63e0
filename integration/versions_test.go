package integration

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
)

// TestObjectVersions (issue 22, must-be-true 1), on a file store and on
// S3: offsets committed naming version v1 of a key keep resolving to v1,
// on every server, and keep reading v1's bytes (client.Read and `metad
// read`) after other versions of the key are registered; appends naming a
// new version resolve to it and read its bytes; once v1's appends are
// trimmed and its pins are gone, GC deletes v1 and nothing else.
//
// The same bytes stored again mean different things per store: on a file
// store the identity is their SHA-256, so they name v1 again (registering
// them changes nothing; an append naming them names v1); on S3 they are a
// new version with its own VersionId, which the registry holds beside v1.
func TestObjectVersions(t *testing.T) {
	extra := []string{"--gc-interval", "200ms", "--gc-min-idle", "5s", "--pin-ttl", "3s"}
	onBothStores(t, extra, func(t *testing.T, s *storeRun) {
		nodes := make([]*client.Client, len(s.c.Nodes))
		for i := range nodes {
			nodes[i] = s.nodeClient(t, i)
		}
		key := fmt.Sprintf("s%d/packed", s.b.stream)

		// v1 packs the bytes of two appends.
		v1Bytes := []byte("first append, v1|second append, v1")
		v1 := s.putVersion(t, key, v1Bytes)
		v1a := sliceOf(t, v1, v1Bytes, 0, "first append, v1")
		v1b := sliceOf(t, v1, v1Bytes, 17, "second append, v1")
		committed := []struct {
			rng fsm.Range
			sl  slice
		}{{s.commit(t, 10, v1a), v1a}, {s.commit(t, 10, v1b), v1b}}
		trimTo := committed[1].rng.End
		checkOffsets := func(when string) {
			t.Helper()
			for _, a := range committed {
				for _, off := range []uint64{a.rng.Start, a.rng.End - 1} {
					s.expectSlice(t, nodes, off, a.sl, when)
				}
			}
		}
		checkOffsets("before any other version")

		// The same bytes again.
		same := s.putVersion(t, key, v1Bytes)
		vs := s.describe(t, key)
		if s.local != nil {
			if same != v1 || len(vs) != 1 {
				t.Fatalf("file store: identical bytes stored again are %s, registry %v; want v1 %s, one version", same.Identity, statuses(vs), v1.Identity)
			}
		} else {
			if same.Identity == v1.Identity || len(vs) != 2 || vs[v1.Identity].GetStatus() != metadpb.ObjectStatus_LIVE || vs[same.Identity].GetStatus() != metadpb.ObjectStatus_LIVE {
				t.Fatalf("S3: identical bytes stored again are %s, registry %v; want a second LIVE version beside v1 %s", same.Identity, statuses(vs), v1.Identity)
			}
			sameA := sliceOf(t, same, v1Bytes, 0, "first append, v1")
			committed = append(committed, struct {
				rng fsm.Range
				sl  slice
			}{s.commit(t, 10, sameA), sameA})
		}
		checkOffsets("after the same bytes were stored again")

		// Other bytes: v2, and an append naming it.
		v2Bytes := []byte("first append, v2 (other bytes)")
		v2 := s.putVersion(t, key, v2Bytes)
		if v2.Identity == v1.Identity || v2.Identity == same.Identity {
			t.Fatalf("other bytes got identity %s, an earlier version's", v2.Identity)
		}
		v2a := sliceOf(t, v2, v2Bytes, 0, string(v2Bytes))
		committed = append(committed, struct {
			rng fsm.Range
			sl  slice
		}{s.commit(t, 10, v2a), v2a})
		checkOffsets("after v2 was registered")
		versions := 3 // v1, the same bytes again, v2
		if s.local != nil {
			versions = 2 // the same bytes are v1
		}
		if vs := s.describe(t, key); len(vs) != versions || vs[v2.Identity].GetStatus() != metadpb.ObjectStatus_LIVE {
			t.Fatalf("registry after v2: %v, want %d LIVE versions", statuses(vs), versions)
		}

		// v1's appends trimmed, while a pin of our own holds v1 for 20s.
		pin, err := client.Call(s.b.ctx(), s.b.c, s.b.c.Metad.Pin, &metadpb.PinRequest{
			Object: &metadpb.ObjectRef{Key: v1.Key, Identity: v1.Identity}, Holder: "test", Ttl: durationpb.New(20 * time.Second), RequestId: client.NewRequestID()})
		if err != nil {
			t.Fatalf("pin v1: %v", err)
		}
		if _, err := client.Call(s.b.ctx(), s.b.c, s.b.c.Metad.Trim, &metadpb.TrimRequest{StreamId: s.b.stream, Offset: trimTo, RequestId: client.NewRequestID()}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "GC to mark v1 DELETING", 30*time.Second, func() bool {
			return s.describe(t, key)[v1.Identity].GetStatus() == metadpb.ObjectStatus_DELETING
		})
		// GC waits for the pin's expiry and a margin past it; on our clock
		// (the servers share it) the pin may only be checked before then.
		if time.Now().Before(pin.Expiry.AsTime()) {
			if !s.versionExists(t, v1) {
				t.Fatal("v1's bytes deleted while a pin on v1 is in force")
			}
		} else {
			t.Logf("the pin on v1 expired before v1 was DELETING: not checking that it kept the bytes")
		}
		for id, st := range statuses(s.describe(t, key)) {
			if id != v1.Identity && st != metadpb.ObjectStatus_LIVE {
				t.Fatalf("version %s is %s while only v1 is unreferenced", id, st)
			}
		}
		// Our pin and the resolves' shared pins (TTL 3s) expire by
		// themselves; GC deletes after the last expiry and its margin for
		// clock rates.
		waitUntil(t, "GC to delete v1", 90*time.Second, func() bool {
			return s.describe(t, key)[v1.Identity].GetStatus() == metadpb.ObjectStatus_DELETED
		})

		// v1 and only v1 is gone: from the store and in the registry.
		if s.versionExists(t, v1) {
			t.Fatal("v1 is DELETED and its bytes are still in the store")
		}
		vs = s.describe(t, key)
		for id, st := range statuses(vs) {
			want := metadpb.ObjectStatus_LIVE
			if id == v1.Identity {
				want = metadpb.ObjectStatus_DELETED
			}
			if st != want {
				t.Fatalf("after GC, version %s is %s, want %s (registry %v)", id, st, want, statuses(vs))
			}
		}
		for _, a := range committed {
			if a.sl.obj == v1 {
				if resp, err := s.b.resolve(metadpb.View_COMMITTED, a.rng.Start); err != nil || resp.Outcome != metadpb.Outcome_OFFSET_TRIMMED {
					t.Fatalf("trimmed offset %d: %v %v, want OFFSET_TRIMMED", a.rng.Start, resp, err)
				}
				continue
			}
			if !s.versionExists(t, a.sl.obj) {
				t.Fatalf("version %s deleted with v1", a.sl.obj.Identity)
			}
			s.expectSlice(t, nodes, a.rng.Start, a.sl, "after GC deleted v1")
		}
	})
}

// expectSlice: offset resolves to exactly sl's version and byte range on
// every server, and client.Read and `metad read` through every server
// return sl's bytes without falling back.
func (s *storeRun) expectSlice(t *testing.T, nodes []*client.Client, offset uint64, sl slice, when string) {
	t.Helper()
	for i, cl := range nodes {
		ctx := ctxT(t, 20*time.Second)
		resp, err := cl.Resolve(ctx, s.b.stream, metadpb.View_COMMITTED, offset, nil)
		if err != nil || resp.Outcome != metadpb.Outcome_TARGET {
			t.Fatalf("%s: resolve %d on %s: %v %v", when, offset, s.c.Nodes[i].ID, resp, err)
		}
		tg := resp.Target
		if tg.Object.Key != sl.obj.Key || tg.Object.Identity != sl.obj.Identity || tg.Bytes.GetOffset() != sl.off || tg.Bytes.GetLength() != uint64(len(sl.data)) {
			t.Fatalf("%s: offset %d on %s resolves to %s@%s %v, want %s@%s [%d,+%d)", when, offset, s.c.Nodes[i].ID,
				tg.Object.Key, tg.Object.Identity, tg.Bytes, sl.obj.Key, sl.obj.Identity, sl.off, len(sl.data))
		}
		res, err := s.read(cl, offset, 20*time.Second)
		if err != nil || string(res.Data) != string(sl.data) || len(res.Fallbacks) != 0 {
			t.Fatalf("%s: client.Read of %d through %s: %+v %v, want %q and no fallback", when, offset, s.c.Nodes[i].ID, res, err, sl.data)
		}
		out, errOut, code := s.cliRead(t, i, offset, 20*time.Second)
		if code != 0 || out != string(sl.data) {
			t.Fatalf("%s: metad read %d through %s: exit %d, %q, want %q\n%s", when, offset, s.c.Nodes[i].ID, code, out, sl.data, errOut)
		}
	}
}

// versionExists reports whether the store still holds version obj's
// bytes, looked at behind metad's back: the version's file, or a GET of
// the S3 version by its VersionId.
func (s *storeRun) versionExists(t *testing.T, obj fsm.ObjectRef) bool {
	t.Helper()
	if s.local != nil {
		path, ok := s.local.VersionPath(obj.Key, obj.Identity)
		if !ok {
			t.Fatalf("%s is no identity of a file store", obj.Identity)
		}
		_, err := os.Stat(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}
	vid := obj.Identity[strings.LastIndex(obj.Identity, ":")+1:]
	out, err := s.w.Admin.GetObject(ctxT(t, 10*time.Second), &s3.GetObjectInput{Bucket: aws.String("metad"),
		Key: aws.String("cluster/" + obj.Key), VersionId: aws.String(vid)})
	var resp *awshttp.ResponseError
	if errors.As(err, &resp) && resp.HTTPStatusCode() == 404 {
		return false
	}
	if err != nil {
		t.Fatalf("versioned GET of %s: %v", obj.Identity, err)
	}
	out.Body.Close()
	return true
}
