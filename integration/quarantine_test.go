package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/objectstore"
)

// Quarantine with a life cycle (G10): nothing a client reports makes a
// committed offset unreadable while intact bytes for it exist. Each test
// runs a 3-node cluster whose repair scan runs every second, and one
// broker stream holding [0,10) in generation 0 only.

const quarantineScan = time.Second

func quarantineCluster(t *testing.T) (*broker, *metadpb.StoredIndexRecord, fsm.ObjectRef) {
	t.Helper()
	c := proc.New(t, 3, "--repair-scan-interval", quarantineScan.String())
	c.StartAll()
	formed(t, c, 3)
	b := newBroker(t, c, "quarantine")
	_, obj := b.append(10, []byte("the bytes of [0,10)"), true)
	recs := gen0(t, b)
	if len(recs) != 1 || recs[0].Status != metadpb.RecordStatus_VALID {
		t.Fatalf("generation 0: %v", recs)
	}
	return b, recs[0], obj
}

// versionPath is the file of one version in the file:// store
// (objectstore/local.go documents the layout).
func versionPath(b *broker, obj fsm.ObjectRef) string {
	sum := sha256.Sum256([]byte(obj.Key))
	return filepath.Join(b.store.(*objectstore.Local).Dir(), hex.EncodeToString(sum[:]), "sha256-"+strings.TrimPrefix(obj.Identity, "sha256:"))
}

func (b *broker) report(rec *metadpb.StoredIndexRecord, kind metadpb.FailureKind) *metadpb.ReportCandidateFailureResponse {
	b.t.Helper()
	resp, err := client.Call(b.ctx(), b.c, b.c.Metad.ReportCandidateFailure, &metadpb.ReportCandidateFailureRequest{
		Candidate: &metadpb.CandidateRef{Key: rec.Key, Version: rec.Version}, Kind: kind, Detail: "test", RequestId: client.NewRequestID(),
	})
	if err != nil {
		b.t.Fatalf("report %v: %v", kind, err)
	}
	return resp
}

// awaitValid waits until the generation-0 record is valid again, without
// resolving (so only the periodic repair scan can have lifted it), and
// says how long that took.
func awaitValid(t *testing.T, b *broker) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, "the quarantine lifted by the repair scan", func() bool {
		recs := gen0(t, b)
		return len(recs) == 1 && recs[0].Status == metadpb.RecordStatus_VALID
	})
	return time.Since(start)
}

func mustResolveTo(t *testing.T, b *broker, obj fsm.ObjectRef) {
	t.Helper()
	tg := b.mustTarget(metadpb.View_COMMITTED, 3)
	if tg.Object.Key != obj.Key || tg.Object.Identity != obj.Identity {
		t.Fatalf("resolved to %v, want %v", tg.Object, obj)
	}
}

// TestMissingObjectRestoredIsReadableAgain: the object is moved away, a
// reader's OBJECT_MISSING report is confirmed and quarantines the record,
// resolves fail retryably; the same bytes put back, the repair scan lifts
// the quarantine within about one scan interval with no manual step.
func TestMissingObjectRestoredIsReadableAgain(t *testing.T) {
	b, rec, obj := quarantineCluster(t)
	path := versionPath(b, obj)
	aside := path + ".aside"
	if err := os.Rename(path, aside); err != nil {
		t.Fatal(err)
	}
	resp := b.report(rec, metadpb.FailureKind_OBJECT_MISSING)
	if !resp.Confirmed || !resp.Quarantined {
		t.Fatalf("report of a missing object: %+v, want confirmed and quarantined", resp)
	}
	// The client retries a retryable failure until its deadline; 3s is
	// enough to see which failure it is.
	if _, err := b.c.Resolve(ctxT(t, 3*time.Second), b.stream, metadpb.View_COMMITTED, 3, nil); !retryable(err) {
		t.Fatalf("resolve while the bytes are gone: %v, want a retryable failure", err)
	}
	if err := os.Rename(aside, path); err != nil {
		t.Fatal(err)
	}
	took := awaitValid(t, b)
	t.Logf("quarantine lifted %v after the bytes returned (scan interval %v)", took.Round(time.Millisecond), quarantineScan)
	mustResolveTo(t, b, obj)
}

// TestFalseCorruptReportChangesNothing: a CORRUPT report about intact bytes
// is not confirmed: nothing is quarantined, the record keeps its version,
// and the answer says why.
func TestFalseCorruptReportChangesNothing(t *testing.T) {
	b, rec, obj := quarantineCluster(t)
	resp := b.report(rec, metadpb.FailureKind_CORRUPT)
	if resp.Confirmed || resp.Quarantined || resp.Version != 0 || !strings.Contains(resp.Verdict, "intact") {
		t.Fatalf("false report: %+v, want unconfirmed, nothing changed", resp)
	}
	if recs := gen0(t, b); recs[0].Status != metadpb.RecordStatus_VALID || recs[0].Version != rec.Version {
		t.Fatalf("after a false report: %v", recs[0])
	}
	mustResolveTo(t, b, obj)
}

// TestTrueCorruptReportQuarantinesUntilRepaired: bytes altered in place are
// confirmed corrupt and quarantined; once the right bytes are back, the
// quarantine is lifted by itself.
func TestTrueCorruptReportQuarantinesUntilRepaired(t *testing.T) {
	b, rec, obj := quarantineCluster(t)
	path := versionPath(b, obj)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.ToUpper(string(good))), 0o644); err != nil {
		t.Fatal(err)
	}
	resp := b.report(rec, metadpb.FailureKind_CORRUPT)
	if !resp.Confirmed || !resp.Quarantined {
		t.Fatalf("report of altered bytes: %+v, want confirmed and quarantined", resp)
	}
	recs := gen0(t, b)
	if recs[0].Status != metadpb.RecordStatus_QUARANTINED {
		t.Fatalf("after a true report: %v", recs[0])
	}
	listed, err := client.Call(b.ctx(), b.c, b.c.Metad.ListQuarantined, &metadpb.ListQuarantinedRequest{})
	if err != nil || len(listed.Records) != 1 || listed.Records[0].Version != recs[0].Version {
		t.Fatalf("ListQuarantined: %v %v", listed, err)
	}
	// An operator's lift verifies first: the bytes are still wrong.
	_, err = client.Call(b.ctx(), b.c, b.c.Metad.LiftQuarantine, &metadpb.LiftQuarantineRequest{Key: recs[0].Key, Version: recs[0].Version})
	if !errors.Is(err, client.ErrQuarantineNotVerified) || !errors.Is(err, client.ErrFailedPrecondition) {
		t.Fatalf("lift of unverified bytes: %v", err)
	}
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	took := awaitValid(t, b)
	t.Logf("quarantine lifted %v after the right bytes were back (scan interval %v)", took.Round(time.Millisecond), quarantineScan)
	mustResolveTo(t, b, obj)
}

func retryable(err error) bool {
	e, ok := client.AsError(err)
	return ok && e.Retryable()
}
