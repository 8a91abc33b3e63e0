package client

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/objectstore"
)

// fakeMetad serves Resolve from a list of targets, newest first: the
// first one not excluded, as the server's same-view fallback would. It
// records failure reports.
type fakeMetad struct {
	metadpb.MetadClient
	targets []*metadpb.Target

	mu      sync.Mutex
	reports []*metadpb.ReportCandidateFailureRequest
}

func (f *fakeMetad) Resolve(ctx context.Context, req *metadpb.ResolveRequest, _ ...grpc.CallOption) (*metadpb.ResolveResponse, error) {
next:
	for _, t := range f.targets {
		for _, ex := range req.Exclude {
			if ex.GetKey().GetGeneration() == t.Key.Generation && ex.Version == t.Version {
				continue next
			}
		}
		return &metadpb.ResolveResponse{Outcome: metadpb.Outcome_TARGET, Target: t, CommittedEnd: 1}, nil
	}
	return nil, status.Error(codes.FailedPrecondition, "every candidate excluded")
}

func (f *fakeMetad) ReleasePin(context.Context, *metadpb.ReleasePinRequest, ...grpc.CallOption) (*metadpb.ReleasePinResponse, error) {
	return &metadpb.ReleasePinResponse{}, nil
}

func (f *fakeMetad) ReportCandidateFailure(ctx context.Context, req *metadpb.ReportCandidateFailureRequest, _ ...grpc.CallOption) (*metadpb.ReportCandidateFailureResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, req)
	return &metadpb.ReportCandidateFailureResponse{Quarantined: true}, nil
}

func newFakeClient(t *testing.T, store objectstore.Store, m *fakeMetad, reg prometheus.Registerer) *Client {
	t.Helper()
	c := &Client{cfg: Config{Objects: store, Timeout: 10 * time.Second, MaxRetryDelay: time.Second, Holder: "test"},
		metrics: newReadMetrics(reg), Metad: m}
	t.Cleanup(c.bg.Wait)
	return c
}

// target names bytes [off, off+length) of info under generation gen, with
// the data checksum sum (nil: none, a record from before data checksums).
func target(info objectstore.Info, gen, off, length uint64, sum *uint32) *metadpb.Target {
	return &metadpb.Target{
		Key:     &metadpb.IndexKey{StreamId: 1, View: metadpb.View_COMMITTED, Generation: gen},
		Version: 10 + gen, RecordRange: &metadpb.Range{Start: 0, End: 1}, Resolved: &metadpb.Range{Start: 0, End: 1},
		Object: &metadpb.ObjectRef{Key: info.Key, Identity: info.Identity},
		Bytes:  &metadpb.ByteRange{Offset: off, Length: length}, PinId: 0, DataCrc32C: sum,
	}
}

func putLocal(t *testing.T, s *objectstore.Local, key, data string) objectstore.Info {
	t.Helper()
	info, err := s.Put(context.Background(), key, strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestReadFallsBackFromASliceRewrittenInPlace: the newest candidate names
// bytes [8, 16) of a 24-byte object whose bytes were rewritten in place
// after the record was committed. Its identity still opens the file and a
// ranged read sees nothing wrong; the data checksum does. Read must not
// return those bytes: it reports the candidate CORRUPT, excludes it and
// reads the next one in the same view.
func TestReadFallsBackFromASliceRewrittenInPlace(t *testing.T) {
	store, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seg := putLocal(t, store, "seg-1", "header--payload!trailer.")
	gen0 := putLocal(t, store, "gen0-1", "payload!")
	path, _ := store.VersionPath(seg.Key, seg.Identity)
	if err := os.WriteFile(path, []byte("header--PAYLOAD!trailer."), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := checksum.Of([]byte("payload!"))
	m := &fakeMetad{targets: []*metadpb.Target{target(seg, 1, 8, 8, sum.Ptr()), target(gen0, 0, 0, 8, sum.Ptr())}}
	reg := prometheus.NewRegistry()
	c := newFakeClient(t, store, m, reg)

	res, err := c.Read(context.Background(), 1, metadpb.View_COMMITTED, 0)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if string(res.Data) != "payload!" || res.Target.Key.Generation != 0 || res.Unchecked {
		t.Fatalf("Read = %q from generation %d (unchecked %v), want the intact generation-0 bytes", res.Data, res.Target.Key.Generation, res.Unchecked)
	}
	if len(res.Fallbacks) != 1 || res.Fallbacks[0].Kind != metadpb.FailureKind_CORRUPT || res.Fallbacks[0].Candidate.Key.Generation != 1 {
		t.Fatalf("fallbacks %+v, want generation 1 CORRUPT", res.Fallbacks)
	}
	c.bg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reports) != 1 || m.reports[0].Kind != metadpb.FailureKind_CORRUPT || m.reports[0].Candidate.Key.Generation != 1 ||
		!strings.Contains(m.reports[0].Detail, "data checksum mismatch") {
		t.Fatalf("reports %v, want one CORRUPT report of generation 1 naming the data checksum", m.reports)
	}
	if got := counterValue(t, c.metrics.corrupt); got != 1 {
		t.Fatalf("metad_client_reads_corrupt_total = %v, want 1", got)
	}
}

// TestReadWithoutAChecksumIsUncheckedAndCounted: a target from before data
// checksums is read as it is, said in the result, and counted — on one
// counter shared by every client registered in the same registry.
func TestReadWithoutAChecksumIsUncheckedAndCounted(t *testing.T) {
	store, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seg := putLocal(t, store, "seg-1", "header--payload!trailer.")
	reg := prometheus.NewRegistry()
	for i := range 2 {
		c := newFakeClient(t, store, &fakeMetad{targets: []*metadpb.Target{target(seg, 0, 8, 8, nil)}}, reg)
		res, err := c.Read(context.Background(), 1, metadpb.View_COMMITTED, 0)
		if err != nil || string(res.Data) != "payload!" || !res.Unchecked || len(res.Fallbacks) != 0 {
			t.Fatalf("read %d: %+v, %v; want the bytes, unchecked", i, res, err)
		}
	}
	if got := gathered(t, reg, "metad_client_reads_unchecked_total"); got != 2 {
		t.Fatalf("metad_client_reads_unchecked_total = %v, want 2", got)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// gathered is the value of the one counter named name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.Metric) == 1 {
			return f.Metric[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("%s: not gathered as one series", name)
	return 0
}

// TestReadChecksTheRightBytes: a target whose bytes match its checksum is
// returned checked, with no fallback and no report.
func TestReadChecksTheRightBytes(t *testing.T) {
	store, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seg := putLocal(t, store, "seg-1", "header--payload!trailer.")
	m := &fakeMetad{targets: []*metadpb.Target{target(seg, 0, 8, 8, checksum.Of([]byte("payload!")).Ptr())}}
	c := newFakeClient(t, store, m, nil)
	res, err := c.Read(context.Background(), 1, metadpb.View_COMMITTED, 0)
	if err != nil || string(res.Data) != "payload!" || res.Unchecked || len(res.Fallbacks) != 0 {
		t.Fatalf("Read = %+v, %v", res, err)
	}
	c.bg.Wait()
	if len(m.reports) != 0 {
		t.Fatalf("reports %v, want none", m.reports)
	}
}
