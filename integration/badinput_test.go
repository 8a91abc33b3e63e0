package integration

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"
)

type badCase struct {
	name  string
	call  func(ctx context.Context, m metadpb.MetadClient) error
	code  codes.Code
	field string // "" when the code has no field (e.g. ResourceExhausted)
}

func badCases() []badCase {
	obj := &metadpb.ObjectRef{Key: "k", Identity: "sha256:x"}
	byteRange := &metadpb.ByteRange{Length: 1}
	rec := func(start, end uint64) *metadpb.IndexRecord {
		return &metadpb.IndexRecord{Range: &metadpb.Range{Start: start, End: end}, Object: obj, Bytes: byteRange}
	}
	many := make([]*metadpb.IndexRecord, 5000)
	for i := range many {
		many[i] = rec(uint64(i), uint64(i+1))
	}
	exclusions := make([]*metadpb.CandidateRef, 300)
	for i := range exclusions {
		exclusions[i] = &metadpb.CandidateRef{Key: &metadpb.IndexKey{StreamId: 1, View: metadpb.View_COMMITTED}, Version: 1}
	}
	call := func(f func(context.Context, metadpb.MetadClient) error) func(context.Context, metadpb.MetadClient) error {
		return f
	}
	return []badCase{
		{"create: empty name", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CreateStream(ctx, &metadpb.CreateStreamRequest{})
			return err
		}), codes.InvalidArgument, "name"},
		{"create: control character in name", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CreateStream(ctx, &metadpb.CreateStreamRequest{Name: "a\x01b"})
			return err
		}), codes.InvalidArgument, "name"},
		{"create: name too long", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CreateStream(ctx, &metadpb.CreateStreamRequest{Name: strings.Repeat("n", 300)})
			return err
		}), codes.InvalidArgument, "name"},
		{"append: no stream", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CommitAppend(ctx, &metadpb.CommitAppendRequest{End: 1, Object: obj, Bytes: byteRange})
			return err
		}), codes.InvalidArgument, "stream_id"},
		{"append: no object", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CommitAppend(ctx, &metadpb.CommitAppendRequest{StreamId: 1, End: 1, Bytes: byteRange})
			return err
		}), codes.InvalidArgument, "object"},
		{"append: empty range", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CommitAppend(ctx, &metadpb.CommitAppendRequest{StreamId: 1, ExpectedStart: 5, End: 5, Object: obj, Bytes: byteRange})
			return err
		}), codes.InvalidArgument, "end"},
		{"append: absurd end", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CommitAppend(ctx, &metadpb.CommitAppendRequest{StreamId: 1, End: 1 << 63, Object: obj, Bytes: byteRange})
			return err
		}), codes.InvalidArgument, "end"},
		{"append: unknown stream", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CommitAppend(ctx, &metadpb.CommitAppendRequest{StreamId: 999, End: 1, Object: obj, Bytes: byteRange})
			return err
		}), codes.NotFound, "stream_id"},
		{"publish: no view", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.PublishGeneration(ctx, &metadpb.PublishGenerationRequest{StreamId: 1, Generation: 1, Coverage: &metadpb.Range{End: 1}})
			return err
		}), codes.InvalidArgument, "view"},
		{"publish: view out of range", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.PublishGeneration(ctx, &metadpb.PublishGenerationRequest{StreamId: 1, View: 9, Generation: 1, Coverage: &metadpb.Range{End: 1}})
			return err
		}), codes.InvalidArgument, "view"},
		{"publish: generation 0", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.PublishGeneration(ctx, &metadpb.PublishGenerationRequest{StreamId: 1, View: metadpb.View_COMMITTED, Coverage: &metadpb.Range{End: 1}})
			return err
		}), codes.InvalidArgument, "generation"},
		{"publish: records out of order", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.PublishGeneration(ctx, &metadpb.PublishGenerationRequest{StreamId: 1, View: metadpb.View_COMMITTED, Generation: 1,
				Coverage: &metadpb.Range{End: 10}, Records: []*metadpb.IndexRecord{rec(5, 6), rec(1, 2)}})
			return err
		}), codes.InvalidArgument, "records[1].range"},
		{"publish: too many records", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.PublishGeneration(ctx, &metadpb.PublishGenerationRequest{StreamId: 1, View: metadpb.View_COMMITTED, Generation: 1,
				Coverage: &metadpb.Range{End: 5000}, Records: many})
			return err
		}), codes.InvalidArgument, "records"},
		{"trim: absurd offset", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Trim(ctx, &metadpb.TrimRequest{StreamId: 1, Offset: 1 << 63})
			return err
		}), codes.InvalidArgument, "offset"},
		{"trim: unknown stream", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Trim(ctx, &metadpb.TrimRequest{StreamId: 424242, Offset: 1})
			return err
		}), codes.NotFound, "stream_id"},
		{"pin: no ttl", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Pin(ctx, &metadpb.PinRequest{Object: obj})
			return err
		}), codes.InvalidArgument, "ttl"},
		{"pin: ttl too long", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Pin(ctx, &metadpb.PinRequest{Object: obj, Ttl: durationpb.New(time.Hour)})
			return err
		}), codes.InvalidArgument, "ttl"},
		{"pin: reserved holder", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Pin(ctx, &metadpb.PinRequest{Object: obj, Ttl: durationpb.New(time.Second), Holder: "resolve/shared"})
			return err
		}), codes.InvalidArgument, "holder"},
		{"release: unknown pin", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.ReleasePin(ctx, &metadpb.ReleasePinRequest{PinId: 987654})
			return err
		}), codes.NotFound, "pin_id"},
		{"report: no candidate", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.ReportCandidateFailure(ctx, &metadpb.ReportCandidateFailureRequest{Kind: metadpb.FailureKind_IO_ERROR})
			return err
		}), codes.InvalidArgument, "candidate.key"},
		{"report: no kind", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.ReportCandidateFailure(ctx, &metadpb.ReportCandidateFailureRequest{Candidate: &metadpb.CandidateRef{
				Key: &metadpb.IndexKey{StreamId: 1, View: metadpb.View_COMMITTED}, Version: 1}})
			return err
		}), codes.InvalidArgument, "kind"},
		{"resolve: no view", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Resolve(ctx, &metadpb.ResolveRequest{StreamId: 1})
			return err
		}), codes.InvalidArgument, "view"},
		{"resolve: unknown view", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Resolve(ctx, &metadpb.ResolveRequest{StreamId: 1, View: 7})
			return err
		}), codes.InvalidArgument, "view"},
		{"resolve: absurd offset", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Resolve(ctx, &metadpb.ResolveRequest{StreamId: 1, View: metadpb.View_COMMITTED, Offset: 1<<63 + 5})
			return err
		}), codes.InvalidArgument, "offset"},
		{"resolve: exclusion without key", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Resolve(ctx, &metadpb.ResolveRequest{StreamId: 1, View: metadpb.View_COMMITTED, Exclude: []*metadpb.CandidateRef{{Version: 3}}})
			return err
		}), codes.InvalidArgument, "exclude[0]"},
		{"resolve: exclusion of another view", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Resolve(ctx, &metadpb.ResolveRequest{StreamId: 1, View: metadpb.View_COMMITTED, Exclude: []*metadpb.CandidateRef{
				{Key: &metadpb.IndexKey{StreamId: 1, View: metadpb.View_TOPIC_COMPACTED}, Version: 3}}})
			return err
		}), codes.InvalidArgument, "exclude[0].key"},
		{"resolve: too many exclusions", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.Resolve(ctx, &metadpb.ResolveRequest{StreamId: 1, View: metadpb.View_COMMITTED, Exclude: exclusions})
			return err
		}), codes.InvalidArgument, "exclude"},
		{"describe: unknown stream", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: 31337})
			return err
		}), codes.NotFound, "stream_id"},
		{"describe: id and name", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: 1, Name: "x"})
			return err
		}), codes.InvalidArgument, "stream_id"},
		{"list index: no view", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.ListIndex(ctx, &metadpb.ListIndexRequest{StreamId: 1})
			return err
		}), codes.InvalidArgument, "view"},
		{"describe object: no key", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.DescribeObject(ctx, &metadpb.DescribeObjectRequest{})
			return err
		}), codes.InvalidArgument, "key"},
		{"oversized message", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.CreateStream(ctx, &metadpb.CreateStreamRequest{Name: strings.Repeat("x", 9<<20)}, grpc.MaxCallSendMsgSize(64<<20))
			return err
		}), codes.ResourceExhausted, ""},
		{"watch: no stream", call(func(ctx context.Context, m metadpb.MetadClient) error {
			return firstWatchError(ctx, m, &metadpb.WatchRequest{})
		}), codes.InvalidArgument, "stream_id"},
		{"watch: unknown stream", call(func(ctx context.Context, m metadpb.MetadClient) error {
			return firstWatchError(ctx, m, &metadpb.WatchRequest{StreamId: 777})
		}), codes.NotFound, "stream_id"},
		{"watch: version ahead of the state", call(func(ctx context.Context, m metadpb.MetadClient) error {
			return firstWatchError(ctx, m, &metadpb.WatchRequest{StreamId: 1, FromVersion: 1 << 60})
		}), codes.InvalidArgument, "from_version"},
		{"describe: negative wait", call(func(ctx context.Context, m metadpb.MetadClient) error {
			_, err := m.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: 1, Wait: durationpb.New(-time.Second)})
			return err
		}), codes.InvalidArgument, "wait"},
	}
}

// firstWatchError opens a watch and returns how it ends (nil if it sends
// an event instead).
func firstWatchError(ctx context.Context, m metadpb.MetadClient, req *metadpb.WatchRequest) error {
	s, err := m.Watch(ctx, req)
	if err != nil {
		return err
	}
	_, err = s.Recv()
	return err
}

// TestBadRequestsAreRefusedNamingTheField sends every bad request to every
// node (leader and followers): each is refused with InvalidArgument or
// NotFound naming the field, and every node is still serving afterwards.
func TestBadRequestsAreRefusedNamingTheField(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	proc.NewWriter(t, c.Client(), "real") // stream 1 exists
	for i := range c.Nodes {
		m := c.Client(i).Metad
		for _, tc := range badCases() {
			t.Run(c.Nodes[i].ID+"/"+tc.name, func(t *testing.T) {
				err := tc.call(ctxT(t, 10*time.Second), m)
				st, _ := status.FromError(err)
				if st.Code() != tc.code {
					t.Fatalf("code %v (%v), want %v", st.Code(), err, tc.code)
				}
				if tc.field != "" && fieldOf(st) != tc.field {
					t.Fatalf("field %q (%v), want %q", fieldOf(st), err, tc.field)
				}
			})
		}
	}
	// Unknown streams are an outcome of resolve, not an error (G5).
	resp, err := c.Client(0).Metad.Resolve(ctxT(t, 10*time.Second), &metadpb.ResolveRequest{StreamId: 777, View: metadpb.View_COMMITTED})
	if err != nil || resp.Outcome != metadpb.Outcome_NOT_FOUND {
		t.Fatalf("resolve of an unknown stream: %v %v", resp, err)
	}
	for i := range c.Nodes {
		if !c.Running(i) {
			t.Fatalf("%s died", c.Nodes[i].ID)
		}
	}
	formed(t, c, 3)
}

func fieldOf(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Metadata["field"]
		}
	}
	return ""
}

// TestCLIRefusesBadInput: the CLI reports usage mistakes with status 2 and
// what the cluster refused with the server's reason.
func TestCLIRefusesBadInput(t *testing.T) {
	c := proc.New(t, 1)
	c.StartAll()
	formed(t, c, 1)
	addr := "--addr=" + c.Nodes[0].GRPC
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"resolve", "1", "BOGUS", "0"}, 2, "view"},
		{[]string{"resolve", "x", "COMMITTED", "0"}, 3, "STREAM_NOT_FOUND"}, // a STREAM that is not a number is a name
		{[]string{"resolve", "1", "COMMITTED", "5x"}, 2, "offset"},
		{[]string{"resolve", "1", "COMMITTED", "-5"}, 2, "-5 is not a valid argument"},
		{[]string{"stream", "trim", "1"}, 2, "accepts 2 arg"},
		{[]string{"stream", "describe", "999"}, 3, "STREAM_NOT_FOUND"},
		{[]string{"stream", "create", ""}, 2, "INVALID_ARGUMENT"}, // the cluster refusing an argument is bad usage
		{[]string{"append", "1"}, 2, "--data"},
		{[]string{"index", "publish", "1", "--view", "SIDEWAYS", "--coverage", "0-1"}, 2, "--view"},
		{[]string{"status", "-o", "yaml"}, 2, "--output"},
		{[]string{"stream", "watch", "x"}, 3, "STREAM_NOT_FOUND"},
		{[]string{"stream", "watch", "1", "--for", "-1s"}, 2, "--for"},
		{[]string{"stream", "watch", "999", "--for", "10s"}, 3, "STREAM_NOT_FOUND"},
	} {
		cmd := exec.Command(proc.Binary(t), append(tc.args, addr)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("metad %v: exit %d, output %q; want exit %d mentioning %q", tc.args, code, out, tc.code, tc.want)
		}
	}
	if !c.Running(0) {
		t.Fatal("the server died")
	}
}
