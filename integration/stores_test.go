package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/flipproxy"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/internal/weedtest"
	"github.com/metad/metad/objectstore"

	"github.com/metad/metad/internal/waitfor"
)

// storeRun is a formed 3-node cluster at feature level 3 or above with
// one object store — a file:// directory or s3://metad/cluster in a real
// weed mini — and a broker and the CLI flags using the same store.
type storeRun struct {
	c     *proc.Cluster
	b     *broker
	flags []string           // how the CLI names the store
	local *objectstore.Local // the file store; nil on S3
	w     *weedtest.Server   // the S3 server; nil on file
	proxy *flipproxy.Proxy   // on S3, in front of w: every server and client goes through it
}

// versionsLevel is the cluster feature level from which the object
// registry holds versions and appends keep their data checksums.
const versionsLevel = 3

// onBothStores runs fn on a file store and on S3 (weed mini, found as
// every S3 test finds it: $METAD_WEED or scripts/weed.sh).
func onBothStores(t *testing.T, extra []string, fn func(t *testing.T, s *storeRun)) {
	t.Run("file", func(t *testing.T) { fn(t, fileRun(t, extra)) })
	t.Run("s3", func(t *testing.T) { fn(t, s3Run(t, extra)) })
}

func fileRun(t *testing.T, extra []string) *storeRun {
	t.Helper()
	c := proc.New(t, 3, extra...)
	c.StartAll()
	formed(t, c, 3)
	b := newBroker(t, c, "stores")
	local := b.store.(*objectstore.Local)
	s := &storeRun{c: c, b: b, flags: []string{"--object-dir", local.Dir()}, local: local}
	s.waitLevel(t)
	return s
}

func s3Run(t *testing.T, extra []string) *storeRun {
	t.Helper()
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(t)
	w.Bucket(t, "metad", true)
	p := flipproxy.Start(t, w.Endpoint)
	flags := []string{"--object-store", "s3://metad/cluster", "--s3-endpoint", p.Endpoint(), "--s3-path-style"}
	c := proc.New(t, 3, extra...)
	for _, nd := range c.Nodes {
		nd.Args = append(withoutObjectDir(nd.Args), flags...)
	}
	c.StartAll()
	formed(t, c, 3)
	cfg := w.StoreConfig("metad", "cluster")
	cfg.S3.Endpoint = p.Endpoint()
	store, err := objectstore.Open(ctxT(t, 30*time.Second), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &storeRun{c: c, b: newBrokerWithStore(t, c, "stores", store), flags: flags, w: w, proxy: p}
	s.waitLevel(t)
	return s
}

// waitLevel waits until every server reports the cluster at versionsLevel
// or above (a fresh cluster raises its level to the binary's by itself).
func (s *storeRun) waitLevel(t *testing.T) {
	t.Helper()
	s.c.WaitFor(fmt.Sprintf("cluster feature level %d on every server", versionsLevel), 60*time.Second, func() bool {
		for i := range s.c.Nodes {
			st, err := s.c.Status(i)
			if err != nil || st.ClusterFeatureLevel < versionsLevel {
				return false
			}
		}
		return true
	})
}

// putVersion stores payload under key as a new version (on a file store,
// identical bytes name the same version again) and registers it.
func (s *storeRun) putVersion(t *testing.T, key string, payload []byte) fsm.ObjectRef {
	t.Helper()
	info, err := s.b.store.Put(s.b.ctx(), key, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	ref := &metadpb.ObjectRef{Key: info.Key, Identity: info.Identity}
	if _, err := client.Call(s.b.ctx(), s.b.c, s.b.c.Metad.RegisterObject, &metadpb.RegisterObjectRequest{
		Object: ref, Size: uint64(info.Size), RequestId: client.NewRequestID()}); err != nil {
		t.Fatalf("register %s@%s: %v", key, info.Identity, err)
	}
	return fsm.ObjectRef{Key: info.Key, Identity: info.Identity}
}

// slice is a byte range of one object version and the bytes it holds.
type slice struct {
	obj  fsm.ObjectRef
	off  uint64
	data []byte
}

// sliceOf is the slice of version obj, whose bytes are payload, at
// [off, off+len(data)); it fails t if payload does not hold data there.
func sliceOf(t *testing.T, obj fsm.ObjectRef, payload []byte, off int, data string) slice {
	t.Helper()
	if off+len(data) > len(payload) || string(payload[off:off+len(data)]) != data {
		t.Fatalf("payload %q holds no %q at %d", payload, data, off)
	}
	return slice{obj: obj, off: uint64(off), data: []byte(data)}
}

func (sl slice) byteRange() *metadpb.ByteRange {
	return &metadpb.ByteRange{Offset: sl.off, Length: uint64(len(sl.data))}
}

// commit appends n offsets whose bytes are sl, with their data checksum
// and a generation-0 record, and returns their range.
func (s *storeRun) commit(t *testing.T, n uint64, sl slice) fsm.Range {
	t.Helper()
	b := s.b
	desc, err := client.Call(b.ctx(), b.c, b.c.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: b.stream})
	if err != nil {
		t.Fatal(err)
	}
	start := desc.Stream.CommittedEnd
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.CommitAppend, &metadpb.CommitAppendRequest{
		StreamId: b.stream, WriterEpoch: b.epoch, ExpectedStart: start, End: start + n,
		Object: &metadpb.ObjectRef{Key: sl.obj.Key, Identity: sl.obj.Identity}, Bytes: sl.byteRange(),
		DataCrc32C: checksum.Of(sl.data).Ptr(), IndexGen0: true, RequestId: client.NewRequestID(),
	}); err != nil {
		t.Fatalf("append naming %s@%s: %v", sl.obj.Key, sl.obj.Identity, err)
	}
	return fsm.Range{Start: start, End: start + n}
}

// nodeClient is a client of server i alone.
func (s *storeRun) nodeClient(t *testing.T, i int) *client.Client {
	t.Helper()
	cl, err := client.New(client.Config{Addrs: []string{s.c.Nodes[i].GRPC}, Timeout: 20 * time.Second, Objects: s.b.store, Holder: "test-node-" + s.c.Nodes[i].ID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// read is client.Read of offset in the COMMITTED view within timeout.
func (s *storeRun) read(cl *client.Client, offset uint64, timeout time.Duration) (*client.ReadResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return cl.Read(ctx, s.b.stream, metadpb.View_COMMITTED, offset)
}

// cliRead runs `metad read STREAM COMMITTED OFFSET` against server i with
// the store's flags, and returns its stdout, stderr and exit status.
func (s *storeRun) cliRead(t *testing.T, i int, offset uint64, timeout time.Duration) (stdout, stderr string, code int) {
	t.Helper()
	args := append([]string{"read", strconv.FormatUint(s.b.stream, 10), "COMMITTED", strconv.FormatUint(offset, 10),
		"--addr", s.c.Nodes[i].GRPC, "--timeout", timeout.String()}, s.flags...)
	cmd := exec.Command(proc.Binary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("metad read: %v", err)
	}
	return out.String(), errb.String(), code
}

// describe is DescribeObject of key: its versions by identity.
func (s *storeRun) describe(t *testing.T, key string) map[string]*metadpb.Object {
	t.Helper()
	resp, err := client.Call(s.b.ctx(), s.b.c, s.b.c.Metad.DescribeObject, &metadpb.DescribeObjectRequest{Key: key})
	if err != nil {
		t.Fatalf("describe %s: %v", key, err)
	}
	out := map[string]*metadpb.Object{}
	for _, v := range resp.Versions {
		out[v.Ref.Identity] = v
	}
	return out
}

// statuses is each listed version's status by identity, for messages and
// comparisons.
func statuses(vs map[string]*metadpb.Object) map[string]metadpb.ObjectStatus {
	out := map[string]metadpb.ObjectStatus{}
	for id, v := range vs {
		out[id] = v.Status
	}
	return out
}

// waitUntil polls cond until it holds, failing t after bound.
func waitUntil(t *testing.T, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	waitfor.Cond(t, bound, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}
