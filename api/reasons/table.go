package reasons

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api/metadpb"
)

// Spec is one way a reason reaches the wire: its gRPC code, whether it is
// definite, and the retry delay the server asks for (zero: none).
type Spec struct {
	Code     codes.Code
	Definite bool
	Retry    time.Duration
}

// Row is one reason's entry.
type Row struct {
	Spec // the usual way the reason is sent
	// Also lists the other ways the server sends this reason, each named by
	// one of the Spec variables below.
	Also []Spec
	// Sentinel is the text of the reason's own client sentinel; empty
	// when the reason's sentinel is its code's group sentinel (the reason
	// is the group's generic member, e.g. NOT_FOUND for codes.NotFound).
	Sentinel string
	// GroupByCode: the reason is sent with codes of different groups, so a
	// client takes its group from the code each error arrives with rather
	// than from Spec.Code.
	GroupByCode bool
	// Transport: the client's own reason for a status that carries no
	// ErrorInfo with this code (a failure that never reached metad); a
	// server never sends it. The client applies the row's definiteness and
	// retry delay to such a status.
	Transport bool
}

// Forms lists every way the row's reason may be sent: Spec, then Also.
func (r Row) Forms() []Spec { return append([]Spec{r.Spec}, r.Also...) }

func refusal(code codes.Code, sentinel string) Row {
	return Row{Spec: Spec{code, true, 0}, Sentinel: sentinel}
}

func unavailable(definite bool, retry time.Duration, sentinel string) Row {
	return Row{Spec: Spec{codes.Unavailable, definite, retry}, Sentinel: sentinel}
}

// The other ways some reasons are sent (Row.Also).
var (
	// WatchCutOff ends a watch stream; the client resumes from the
	// last_version the error names, at this or another member.
	WatchCutOff = Spec{codes.Unavailable, true, 100 * time.Millisecond}
	// TooManyWatchers refuses a watch on a member at its watcher limit.
	TooManyWatchers = Spec{codes.ResourceExhausted, true, time.Second}
	// StoreUnavailable refuses a quarantine lift whose bytes the object
	// store could not check now.
	StoreUnavailable = Spec{codes.Unavailable, true, time.Second}
	// LiftNotAtVersion refuses a quarantine lift for a record that is not
	// quarantined at the version asked.
	LiftNotAtVersion = Spec{codes.FailedPrecondition, true, 0}
)

// table is the error table. Refusals before or by the state machine are
// definite; the Raft rows a command may have been committed in are
// indeterminate (the server narrows those per error: raftstore knows
// whether the command reached the log).
var table = map[metadpb.Reason]Row{
	// The state machine's refusals.
	metadpb.Reason_INVALID_ARGUMENT:      refusal(codes.InvalidArgument, ""),
	metadpb.Reason_STREAM_NOT_FOUND:      refusal(codes.NotFound, "metad: stream not found"),
	metadpb.Reason_STREAM_SEALED:         refusal(codes.FailedPrecondition, "metad: stream sealed"),
	metadpb.Reason_STALE_EPOCH:           refusal(codes.FailedPrecondition, "metad: stale writer epoch (fenced)"),
	metadpb.Reason_EPOCH_AHEAD:           refusal(codes.FailedPrecondition, "metad: writer epoch ahead of the stream's"),
	metadpb.Reason_APPEND_NOT_AT_END:     refusal(codes.Aborted, "metad: append not at the committed end"),
	metadpb.Reason_TRIM_BEYOND_END:       refusal(codes.FailedPrecondition, "metad: trim beyond the committed end"),
	metadpb.Reason_TRIM_BACKWARDS:        refusal(codes.FailedPrecondition, "metad: trim backwards"),
	metadpb.Reason_GENERATION_NOT_NEWER:  refusal(codes.FailedPrecondition, "metad: generation not newer"),
	metadpb.Reason_GENERATION_NOT_FOUND:  refusal(codes.NotFound, "metad: generation not found"),
	metadpb.Reason_RECORD_OVERLAP:        refusal(codes.FailedPrecondition, "metad: index records overlap"),
	metadpb.Reason_RECORD_OUT_OF_RANGE:   refusal(codes.FailedPrecondition, "metad: index record out of range"),
	metadpb.Reason_CHECKSUM_MISMATCH:     refusal(codes.InvalidArgument, "metad: checksum mismatch"),
	metadpb.Reason_OBJECT_NOT_REGISTERED: refusal(codes.FailedPrecondition, "metad: object not registered"),
	metadpb.Reason_OBJECT_NOT_LIVE:       refusal(codes.FailedPrecondition, "metad: object not live"),
	metadpb.Reason_IDENTITY_MISMATCH:     refusal(codes.FailedPrecondition, "metad: object identity mismatch"),
	metadpb.Reason_OBJECT_REFERENCED:     refusal(codes.FailedPrecondition, "metad: object referenced"),
	metadpb.Reason_OBJECT_PINNED:         refusal(codes.FailedPrecondition, "metad: object pinned"),
	metadpb.Reason_PIN_NOT_FOUND:         refusal(codes.NotFound, "metad: pin not found"),
	metadpb.Reason_CONDITION_FAILED: {Spec: Spec{codes.Aborted, true, 0}, Also: []Spec{LiftNotAtVersion},
		Sentinel: "metad: condition failed"},
	metadpb.Reason_REQUEST_ID_REUSED: refusal(codes.InvalidArgument, "metad: request id reused"),
	metadpb.Reason_TOO_LARGE:         refusal(codes.InvalidArgument, "metad: too large"),
	metadpb.Reason_RECORD_NOT_FOUND:  refusal(codes.NotFound, "metad: record not found"),

	// Raft, the resolver and the context.
	metadpb.Reason_NOT_LEADER:      unavailable(true, 50*time.Millisecond, "metad: not the leader"),
	metadpb.Reason_NO_LEADER:       {Spec: Spec{codes.Unavailable, true, 200 * time.Millisecond}, Also: []Spec{WatchCutOff}, Sentinel: "metad: no leader"},
	metadpb.Reason_NOT_READY:       unavailable(true, 100*time.Millisecond, "metad: not ready"),
	metadpb.Reason_LEADERSHIP_LOST: unavailable(false, 200*time.Millisecond, "metad: leadership lost"),
	metadpb.Reason_COMMIT_TIMEOUT:  unavailable(false, 200*time.Millisecond, "metad: commit timeout"),
	metadpb.Reason_SHUTTING_DOWN: {Spec: Spec{codes.Unavailable, false, 500 * time.Millisecond}, Also: []Spec{WatchCutOff},
		Sentinel: "metad: shutting down"},
	metadpb.Reason_DEADLINE_EXCEEDED:   {Spec: Spec{codes.DeadlineExceeded, false, 0}},
	metadpb.Reason_CANCELLED:           {Spec: Spec{codes.Canceled, false, 0}},
	metadpb.Reason_RESOLVE_UNAVAILABLE: unavailable(true, 50*time.Millisecond, "metad: resolve unavailable"),
	metadpb.Reason_OVERLOADED: {Spec: Spec{codes.ResourceExhausted, true, 100 * time.Millisecond}, Also: []Spec{TooManyWatchers},
		Sentinel: "metad: overloaded"},
	metadpb.Reason_NOT_FOUND:  refusal(codes.NotFound, ""),
	metadpb.Reason_PIN_SHARED: refusal(codes.FailedPrecondition, "metad: pin shared"),
	// Membership and leadership changes.
	metadpb.Reason_ALREADY_LEADER: refusal(codes.FailedPrecondition, "metad: already the leader"),
	metadpb.Reason_LAST_VOTER:     refusal(codes.FailedPrecondition, "metad: the last voter"),
	metadpb.Reason_CONFIGURATION_REFUSED: {Spec: Spec{codes.Aborted, true, 200 * time.Millisecond},
		Sentinel: "metad: configuration change refused"},
	// Refused before the proposal: definite, and no retry helps until the
	// cluster's level is raised (every voter upgraded).
	metadpb.Reason_FEATURE_LEVEL: refusal(codes.FailedPrecondition, "metad: the cluster's feature level is too low"),
	// Refused before the proposal while the leader's disk is below its
	// reserve; worth a retry once space is freed.
	metadpb.Reason_DISK_FULL: {Spec: Spec{codes.ResourceExhausted, true, time.Second}, Sentinel: "metad: disk full"},
	// Definite either way; a store that could not answer is worth a
	// retry, bytes that do not verify are not.
	metadpb.Reason_QUARANTINE_NOT_VERIFIED: {Spec: Spec{codes.FailedPrecondition, true, 0}, Also: []Spec{StoreUnavailable},
		Sentinel: "metad: quarantined bytes do not verify", GroupByCode: true},
	metadpb.Reason_INTERNAL: {Spec: Spec{codes.Internal, false, 0}},

	// Watch.
	metadpb.Reason_WATCH_COMPACTED:     refusal(codes.FailedPrecondition, "metad: watch history no longer held"),
	metadpb.Reason_WATCH_SLOW_CONSUMER: {Spec: WatchCutOff, Sentinel: "metad: watcher cut off as a slow consumer"},
	metadpb.Reason_WATCH_RESET:         {Spec: WatchCutOff, Sentinel: "metad: watch reset by a snapshot install"},

	// Refusals before anything ran.
	metadpb.Reason_UNAUTHENTICATED:     refusal(codes.Unauthenticated, ""),
	metadpb.Reason_PERMISSION_DENIED:   refusal(codes.PermissionDenied, ""),
	metadpb.Reason_CLUSTER_ID_MISMATCH: refusal(codes.FailedPrecondition, "metad: the caller belongs to another cluster"),
	metadpb.Reason_UNIMPLEMENTED:       refusal(codes.Unimplemented, ""),

	// The client's own: a status without an ErrorInfo whose code is
	// Unavailable (a broken connection). It may have reached a server.
	metadpb.Reason_UNAVAILABLE: {Spec: Spec{codes.Unavailable, false, 100 * time.Millisecond}, Transport: true},
}

// Of returns the row of a reason. Every reason has one (the package's
// tests check it), so a missing row is a programming error: Of panics.
func Of(r metadpb.Reason) Row {
	row, ok := table[r]
	if !ok {
		panic(fmt.Sprintf("reasons: %v has no row", r))
	}
	return row
}

// Lookup returns the row of a reason as it arrives on the wire (its
// UPPER_SNAKE name); false for a name this build does not know.
func Lookup(name string) (metadpb.Reason, Row, bool) {
	n, ok := metadpb.Reason_value[name]
	if !ok {
		return 0, Row{}, false
	}
	row, ok := table[metadpb.Reason(n)]
	return metadpb.Reason(n), row, ok
}

// All returns every row, keyed by reason (a copy).
func All() map[metadpb.Reason]Row {
	out := make(map[metadpb.Reason]Row, len(table))
	for r, row := range table {
		out[r] = row
	}
	return out
}
