package integration

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// TestSliceRewrittenInPlaceIsNeverServed is the defect of issue 22 on a
// real server and the real `metad read`: an append names bytes [8, 16) of
// a 24-byte object, with the data checksum of those bytes, and the
// object's file is then rewritten in place. A ranged read cannot see it
// (a store checks its digest only on whole-object reads); the data
// checksum does. `metad read` must never print the new bytes: it reports
// the candidate CORRUPT, the server confirms it against the store and
// quarantines the record, and with no intact candidate left the read is a
// retryable failure (exit 4).
func TestSliceRewrittenInPlaceIsNeverServed(t *testing.T) {
	c := proc.New(t, 1)
	c.StartAll()
	formed(t, c, 1)
	b := newBroker(t, c, "slices")
	const original = "header--payload!trailer."
	obj := b.put("slices/seg-0", []byte(original))
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.CommitAppend, &metadpb.CommitAppendRequest{
		StreamId: b.stream, WriterEpoch: b.epoch, ExpectedStart: 0, End: 1,
		Object: &metadpb.ObjectRef{Key: obj.Key, Identity: obj.Identity}, Bytes: &metadpb.ByteRange{Offset: 8, Length: 8},
		IndexGen0: true, RequestId: client.NewRequestID(), DataCrc32C: checksum.Of([]byte(original[8:16])).Ptr(),
	}); err != nil {
		t.Fatalf("append: %v", err)
	}
	read := func(args ...string) ([]byte, int) {
		t.Helper()
		args = append([]string{"read", strconv.FormatUint(b.stream, 10), "COMMITTED", "0", "--addr", c.Nodes[0].GRPC,
			"--object-dir", filepath.Join(c.Dir, "objects"), "--timeout", "5s"}, args...)
		out, err := exec.Command(proc.Binary(t), args...).Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return out, exit.ExitCode()
		} else if err != nil {
			t.Fatalf("metad read: %v", err)
		}
		return out, 0
	}

	kept := gen0(t, b)[0].Record.DataCrc32C != nil
	var intact struct {
		Data      []byte `json:"data"`
		Unchecked bool   `json:"unchecked"`
	}
	out, code := read("-o", "json")
	if err := json.Unmarshal(out, &intact); err != nil || code != 0 || string(intact.Data) != "payload!" || intact.Unchecked == kept {
		t.Fatalf("read of the intact slice: exit %d, %s (%v); want payload!, unchecked %v", code, out, err, !kept)
	}
	if !kept {
		t.Skip("these servers keep no data checksum (below feature level 3): the slice is read unchecked, as said")
	}

	overwriteInPlace(t, b.store, obj.Key, obj.Identity, "header--PAYLOAD!trailer.")
	out, code = read()
	if code != 4 || strings.Contains(string(out), "PAYLOAD!") {
		t.Fatalf("read of the rewritten slice: exit %d, stdout %q; want exit 4 and not the new bytes (G8)", code, out)
	}
	waitFor(t, "the CORRUPT report confirmed and the record quarantined", func() bool {
		recs := gen0(t, b)
		return len(recs) == 1 && recs[0].Status == metadpb.RecordStatus_QUARANTINED
	})
}
