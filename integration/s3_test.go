package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/internal/weedtest"
	"github.com/metad/metad/objectstore"
)

// s3Cluster is a formed 3-node cluster whose object store is
// s3://metad/cluster in a real weed mini, and a broker using the same URL.
func s3Cluster(t *testing.T, extra ...string) (*proc.Cluster, *broker, *weedtest.Server) {
	t.Helper()
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(t)
	w.Bucket(t, "metad", true)
	c := proc.New(t, 3, append([]string{"--gc-interval", "200ms", "--gc-min-idle", "2s", "--share-pins=false"}, extra...)...)
	for _, nd := range c.Nodes {
		nd.Args = append(withoutObjectDir(nd.Args), s3Flags(w)...)
	}
	c.StartAll()
	formed(t, c, 3)
	store, err := objectstore.Open(ctxT(t, 30*time.Second), w.StoreConfig("metad", "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	return c, newBrokerWithStore(t, c, "s3", store), w
}

func s3Flags(w *weedtest.Server) []string {
	return []string{"--object-store", "s3://metad/cluster", "--s3-endpoint", w.Endpoint, "--s3-path-style"}
}

// withoutObjectDir drops proc's default --object-dir (an alias that may
// not be given with --object-store).
func withoutObjectDir(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--object-dir" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// TestS3ObjectStore: with the objects in S3, `metad append` writes bytes
// the client's read path returns; bytes put under a key behind metad's
// back are a new version and never returned; a version whose ETag is not
// the recorded one is IDENTITY_MISMATCH and a deleted version
// OBJECT_MISSING, each falling back within the view; GC deletes exactly
// the version it unlinked, and not while it is pinned.
func TestS3ObjectStore(t *testing.T) {
	c, b, w := s3Cluster(t)
	cliAppend(t, c, b, w, "bytes from the CLI")
	expectRead(t, b, "bytes from the CLI", nil)
	if got := cliRead(t, c, b, w); got != "bytes from the CLI" {
		t.Fatalf("metad read: %q", got)
	}

	g1 := b.rewrite(1, fsm.Range{Start: 0, End: 10}, []byte("generation 1"))
	expectRead(t, b, "generation 1", nil)

	// Overwrite behind metad's back: a new version; reads name theirs.
	putBehindTheBack(t, w, g1.Key, "EVIL BYTES")
	if vs := w.Versions(t, "metad", "cluster/"+g1.Key); len(vs) != 2 {
		t.Fatalf("versions of %s after the overwrite: %v", g1.Key, vs)
	}
	expectRead(t, b, "generation 1", nil)

	// Generation 2 records the version with the ETag of other bytes (as a
	// broker that mixed up two uploads would): weed refuses the If-Match.
	forged := forgedIdentity(t, b, w, "s/gen-2", "generation 2")
	if err := b.publish(metadpb.View_COMMITTED, 2, fsm.Range{Start: 0, End: 10}, record{rng: fsm.Range{Start: 0, End: 10}, obj: forged, length: 12}); err != nil {
		t.Fatal(err)
	}
	expectRead(t, b, "generation 1", []metadpb.FailureKind{metadpb.FailureKind_IDENTITY_MISMATCH})
	if got := cliRead(t, c, b, w); got != "generation 1" {
		t.Fatalf("metad read: %q", got)
	}

	// Generation 1's version deleted behind metad's back: OBJECT_MISSING,
	// and the read falls back to generation 0.
	vid := strings.SplitN(g1.Identity, ":", 4)[3]
	if _, err := w.Admin.DeleteObject(ctxT(t, 10*time.Second), &s3.DeleteObjectInput{Bucket: aws.String("metad"), Key: aws.String("cluster/" + g1.Key), VersionId: aws.String(vid)}); err != nil {
		t.Fatal(err)
	}
	expectRead(t, b, "bytes from the CLI", []metadpb.FailureKind{metadpb.FailureKind_OBJECT_MISSING})

	gcDeletesExactlyItsVersion(t, b, w)
}

// TestS3VerifyObjects: with --verify-objects, resolve HEADs each target by
// VersionId with If-Match, so a version recorded with another version's
// ETag is never offered: the resolve answers with the older generation.
func TestS3VerifyObjects(t *testing.T) {
	_, b, w := s3Cluster(t, "--verify-objects")
	b.append(10, []byte("generation 0"), true)
	forged := forgedIdentity(t, b, w, "s/gen-1", "generation 1")
	if err := b.publish(metadpb.View_COMMITTED, 1, fsm.Range{Start: 0, End: 10}, record{rng: fsm.Range{Start: 0, End: 10}, obj: forged, length: 12}); err != nil {
		t.Fatal(err)
	}
	if tg := b.mustTarget(metadpb.View_COMMITTED, 0); tg.Key.Generation != 0 {
		t.Fatalf("target %v, want generation 0 (generation 1's identity fails the HEAD)", tg)
	}
	expectRead(t, b, "generation 0", nil)
}

// TestS3StoreUnavailable: with the S3 server down, a read fails retryably
// and reports nothing (the bytes are not at fault), so no record is
// quarantined; once the server is back the same read returns the bytes.
func TestS3StoreUnavailable(t *testing.T) {
	_, b, w := s3Cluster(t)
	b.append(10, []byte("survives an outage"), true)
	expectRead(t, b, "survives an outage", nil)
	w.Stop()
	res, err := b.read(metadpb.View_COMMITTED, 0, 5*time.Second)
	var re *client.ReadError
	if !errors.As(err, &re) || !re.Retryable() || len(re.Tried) == 0 {
		t.Fatalf("read with the store down: %+v, %v; want a retryable ReadError", res, err)
	}
	for _, f := range re.Tried {
		if !errors.Is(f.Err, objectstore.ErrUnavailable) {
			t.Fatalf("tried %v: want only ErrUnavailable", f)
		}
	}
	w.Restart(t)
	recs := gen0(t, b)
	if len(recs) == 0 {
		t.Fatal("no generation-0 record")
	}
	for _, r := range recs {
		if r.Status != metadpb.RecordStatus_VALID {
			t.Fatalf("record %v after the outage: %s, want VALID (nothing reported)", r.Key, r.Status)
		}
	}
	expectRead(t, b, "survives an outage", nil)
}

// cliAppend runs `metad append` against the cluster with the S3 flags.
func cliAppend(t *testing.T, c *proc.Cluster, b *broker, w *weedtest.Server, data string) {
	t.Helper()
	args := append([]string{"append", strconv.FormatUint(b.stream, 10), "--epoch", strconv.FormatUint(b.epoch, 10),
		"--count", "10", "--data", data, "--addr", c.Nodes[0].GRPC}, s3Flags(w)...)
	out, err := exec.Command(proc.Binary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("metad append: %v\n%s", err, out)
	}
	for _, r := range gen0(t, b) {
		b.bytes[r.Record.Object.Identity] = []byte(data)
	}
}

// cliRead is `metad read STREAM COMMITTED 0` with the S3 flags: the bytes on stdout.
func cliRead(t *testing.T, c *proc.Cluster, b *broker, w *weedtest.Server) string {
	t.Helper()
	args := append([]string{"read", strconv.FormatUint(b.stream, 10), "COMMITTED", "0", "--addr", c.Nodes[0].GRPC}, s3Flags(w)...)
	out, err := exec.Command(proc.Binary(t), args...).Output()
	if err != nil {
		t.Fatalf("metad read: %v", err)
	}
	return string(out)
}

// expectRead reads offset 0 through client.Read and wants data, after
// failures of exactly the given kinds.
func expectRead(t *testing.T, b *broker, data string, fallbacks []metadpb.FailureKind) {
	t.Helper()
	res, err := b.read(metadpb.View_COMMITTED, 0, 20*time.Second)
	if err != nil || string(res.Data) != data {
		t.Fatalf("read: %+v, %v; want %q", res, err, data)
	}
	var kinds []metadpb.FailureKind
	for _, f := range res.Fallbacks {
		kinds = append(kinds, f.Kind)
	}
	// A candidate reported by an earlier read may not be quarantined yet
	// (reports are sent in the background), so more kinds may show.
	if (len(fallbacks) == 0 && len(kinds) > 0) || !containsAll(kinds, fallbacks) {
		t.Fatalf("read of %q fell back after %v, want %v", data, res.Fallbacks, fallbacks)
	}
}

func containsAll(kinds, want []metadpb.FailureKind) bool {
	for _, w := range want {
		if !slices.Contains(kinds, w) {
			return false
		}
	}
	return true
}

func putBehindTheBack(t *testing.T, w *weedtest.Server, key, data string) *s3.PutObjectOutput {
	t.Helper()
	out, err := w.Admin.PutObject(ctxT(t, 10*time.Second), &s3.PutObjectInput{Bucket: aws.String("metad"),
		Key: aws.String("cluster/" + key), Body: bytes.NewReader([]byte(data))})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// forgedIdentity puts data under key through the store, then other bytes
// behind its back, and registers the first version with the second's
// ETag.
func forgedIdentity(t *testing.T, b *broker, w *weedtest.Server, key, data string) fsm.ObjectRef {
	t.Helper()
	info, err := b.store.Put(b.ctx(), key, bytes.NewReader([]byte(data)))
	if err != nil {
		t.Fatal(err)
	}
	other := putBehindTheBack(t, w, key, "OTHER BYTES!")
	p := strings.SplitN(info.Identity, ":", 4)
	p[2] = strings.Trim(aws.ToString(other.ETag), `"`)
	ref := &metadpb.ObjectRef{Key: key, Identity: strings.Join(p, ":")}
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.RegisterObject, &metadpb.RegisterObjectRequest{Object: ref, Size: uint64(info.Size), RequestId: client.NewRequestID()}); err != nil {
		t.Fatal(err)
	}
	return fsm.ObjectRef{Key: ref.Key, Identity: ref.Identity}
}

// gcDeletesExactlyItsVersion: generation 3's key also holds a version put
// behind metad's back; once generation 3 is retired and its pin released,
// GC deletes metad's version and leaves the other.
func gcDeletesExactlyItsVersion(t *testing.T, b *broker, w *weedtest.Server) {
	t.Helper()
	g3 := b.rewrite(3, fsm.Range{Start: 0, End: 10}, []byte("generation 3"))
	foreign := putBehindTheBack(t, w, g3.Key, "someone else's")
	tg := b.mustTarget(metadpb.View_COMMITTED, 0)
	if tg.Object.Identity != g3.Identity || tg.PinId == 0 {
		t.Fatalf("target %v, want generation 3 pinned", tg)
	}
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.RetireGeneration, &metadpb.RetireGenerationRequest{
		StreamId: b.stream, View: metadpb.View_COMMITTED, Generation: 3, RequestId: client.NewRequestID()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "GC to mark the object DELETING", func() bool { return objectStatus(b, g3.Key) == metadpb.ObjectStatus_DELETING })
	// Pinned: both versions stay while GC passes (200ms apart) run; the
	// read through the pin's lease still works.
	p := make([]byte, 12)
	if _, err := b.store.ReadAt(b.ctx(), g3.Key, g3.Identity, p, 0); err != nil || string(p) != "generation 3" {
		t.Fatalf("pinned version unreadable: %q %v", p, err)
	}
	if vs := w.Versions(t, "metad", "cluster/"+g3.Key); len(vs) != 2 {
		t.Fatalf("versions while pinned: %v", vs)
	}
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.ReleasePin, &metadpb.ReleasePinRequest{PinId: tg.PinId, RequestId: client.NewRequestID()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "GC to delete the released version", func() bool { return objectStatus(b, g3.Key) == metadpb.ObjectStatus_DELETED })
	vs := w.Versions(t, "metad", "cluster/"+g3.Key)
	if len(vs) != 1 || vs[0][0] != aws.ToString(foreign.VersionId) {
		t.Fatalf("versions after GC: %v, want only the foreign version %s", vs, aws.ToString(foreign.VersionId))
	}
}

// TestS3ServerRefusesUnusableStore: an unversioned bucket, a missing
// bucket, a wrong endpoint and bad credentials each stop `metad server` at
// start, with exit 2 (a bad setting) and one line naming the bucket, before
// anything is written to the data dir (the retry with a --node-id was
// refused: "node-id n1 differs from node-… stored in …").
func TestS3ServerRefusesUnusableStore(t *testing.T) {
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(t)
	w.Bucket(t, "plain", false)
	w.Bucket(t, "versioned", true)
	cases := []struct {
		name, bucket, endpoint, key, want string
	}{
		{"unversioned", "plain", w.Endpoint, weedtest.AccessKey, "metad: invalid setting: --object-store s3://plain: object store s3://plain at " + w.Endpoint + ": bucket versioning was never enabled"},
		{"missing bucket", "absent", w.Endpoint, weedtest.AccessKey, "s3://absent"},
		{"wrong endpoint", "versioned", "http://" + proc.FreePort(t), weedtest.AccessKey, "bucket not usable: endpoint unreachable"},
		{"bad credentials", "versioned", w.Endpoint, "nobody", "bucket not usable: credentials refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			weedtest.SetCredentials(t, tc.key, weedtest.SecretKey)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dataDir := filepath.Join(t.TempDir(), "d")
			cmd := exec.CommandContext(ctx, proc.Binary(t), "server", "--data-dir", dataDir,
				"--grpc-addr", proc.FreePort(t), "--raft-addr", proc.FreePort(t), "--gossip-addr", proc.FreePort(t), "--http-addr", proc.FreePort(t),
				"--object-store", "s3://"+tc.bucket, "--s3-endpoint", tc.endpoint, "--s3-path-style")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			ok := errors.As(err, &exit)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			// A store the server cannot use is a bad setting (exit 2), as
			// server --validate says of it.
			if !ok || exit.ExitCode() != 2 || ctx.Err() != nil {
				t.Fatalf("server: %v (want exit 2 at start)\n%s", err, stderr.String())
			}
			t.Logf("exit %d: %s", exit.ExitCode(), last)
			if !strings.Contains(last, tc.want) || !strings.Contains(last, "s3://"+tc.bucket) {
				t.Fatalf("last line %q\nwant it to say %q", last, tc.want)
			}
			if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
				entries, _ := os.ReadDir(dataDir)
				t.Fatalf("the refused start left %s behind: %v", dataDir, entries)
			}
		})
	}
}
