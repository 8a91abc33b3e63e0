package api

import (
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/watch"
)

func TestWatchEventPBCarriesEveryKind(t *testing.T) {
	for k := watch.Opened; k <= watch.Deleted; k++ {
		ev := watch.Event{Kind: k, Version: 9, Stream: 3, CommittedEnd: 20, Trim: 5, WriterEpoch: 2, Sealed: k == watch.Sealed,
			Range: fsm.Range{Start: 10, End: 20}, Object: fsm.ObjectRef{Key: "k", Identity: "i"}, Bytes: fsm.ByteRange{Offset: 1, Length: 2},
			View: fsm.TopicCompacted, Generation: 4}
		pb := watchEventPB(ev)
		if pb.Kind == metadpb.WatchEventKind_WATCH_EVENT_KIND_UNSPECIFIED || pb.Version != 9 || pb.StreamId != 3 {
			t.Fatalf("%s: %v", k, pb)
		}
		switch k {
		case watch.Deleted:
			if pb.CommittedEnd != 0 || pb.Status != metadpb.StreamStatus_STREAM_STATUS_UNSPECIFIED {
				t.Fatalf("deleted carries state: %v", pb)
			}
		case watch.Appended:
			if pb.Range.GetEnd() != 20 || pb.Object.GetKey() != "k" || pb.Bytes.GetLength() != 2 || pb.CommittedEnd != 20 {
				t.Fatalf("appended: %v", pb)
			}
		case watch.Published, watch.Retired:
			if pb.View != metadpb.View_TOPIC_COMPACTED || pb.Generation != 4 || pb.Range != nil {
				t.Fatalf("%s: %v", k, pb)
			}
		case watch.Sealed:
			if pb.Status != metadpb.StreamStatus_SEALED {
				t.Fatalf("sealed: %v", pb)
			}
		}
	}
}

func TestWatchErrorsCarryWhatTheClientNeeds(t *testing.T) {
	info := fsm.StreamInfo{ID: 3, Version: 70, CommittedEnd: 500, Trim: 100, Status: fsm.StreamSealed}
	err := watchCompacted(info, watch.ErrCompacted)
	st := status.Convert(err)
	meta := errorInfoOf(t, err)
	if st.Code() != codes.FailedPrecondition || meta.Reason != metadpb.Reason_WATCH_COMPACTED.String() || meta.Metadata["definite"] != "true" ||
		meta.Metadata["version"] != "70" || meta.Metadata["committed_end"] != "500" || meta.Metadata["trim"] != "100" ||
		meta.Metadata["status"] != "SEALED" {
		t.Fatalf("compacted: %v %v", st, meta)
	}
	for cause, reason := range map[error]metadpb.Reason{
		watch.ErrSlowConsumer: metadpb.Reason_WATCH_SLOW_CONSUMER, watch.ErrReset: metadpb.Reason_WATCH_RESET, errShuttingDown: metadpb.Reason_SHUTTING_DOWN,
	} {
		err := watchCutOff(cause, 3, 41)
		meta := errorInfoOf(t, err)
		if status.Code(err) != codes.Unavailable || meta.Reason != reason.String() || meta.Metadata["last_version"] != "41" || !hasRetryInfo(err) {
			t.Fatalf("%v: %v %v", cause, err, meta)
		}
	}
}

func errorInfoOf(t *testing.T, err error) *errdetails.ErrorInfo {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	t.Fatalf("no ErrorInfo in %v", err)
	return nil
}

func hasRetryInfo(err error) bool {
	for _, d := range status.Convert(err).Details() {
		if _, ok := d.(*errdetails.RetryInfo); ok {
			return true
		}
	}
	return false
}
