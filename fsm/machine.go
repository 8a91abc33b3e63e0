package fsm

import (
	"fmt"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// treeDegree is the B-tree degree of every ordered collection. 32 keeps
// nodes at a few KiB and lookups at four or five levels for 10M entries.
const treeDegree = 32

// Machine is metad's replicated state and the only code that changes it.
//
// A Machine is not safe for concurrent use: one goroutine applies commands,
// and readers synchronise with it from outside (raftstore holds the lock).
// Snapshot returns a point-in-time copy that is safe to read concurrently
// with later Applies.
type Machine struct {
	// applied is the Raft index of the last applied command.
	// Invariant: strictly increasing across Apply calls.
	applied uint64
	// clock is machine time: the largest command stamp seen so far.
	// Invariant: never decreases.
	clock int64

	nextStreamID uint64
	nextPinID    uint64
	// level is the cluster's feature level (level.go); 0 means BaseLevel.
	// Invariant: never decreases, never above MaxLevel.
	level uint32

	streams map[uint64]*stream
	// Invariant: byName[s.info.Name] == s.info.ID for every stream s, and
	// nothing else is in byName.
	byName map[string]uint64

	objects *btree.BTreeG[object]
	pins    *btree.BTreeG[pin]
	// Invariant: pinExpiry holds exactly one entry per pin in pins.
	pinExpiry *btree.BTreeG[pinDeadline]
	dedup     *btree.BTreeG[dedupEntry]
	// Invariant: dedupAge holds exactly one entry per entry in dedup.
	dedupAge *btree.BTreeG[dedupDeadline]
	// tombstones are operator removals of servers (tombstone.go), by node
	// id. Invariant: empty below feature level 2; keyed by NodeID.
	tombstones map[string]Tombstone
	// clusterID is the cluster's id (clusterid.go). Invariant: empty
	// below feature level 2; once set, never changes.
	clusterID string

	// kv is the store the state is kept in (kvstate.go), or nil for a
	// machine wholly in memory.
	kv *kvState

	// lastInterned is intern's one-entry cache (snapshot.go): not state,
	// only which target restore shared last.
	lastInterned *target

	// checkInvariants runs CheckInvariants after every Apply. Tests set it;
	// production does not, because the check is O(state).
	checkInvariants bool
	// nextCheck is the index of the next sampled check, in a build with
	// invariants built in (invariants_on.go); not state.
	nextCheck uint64
}

// Option configures a Machine.
type Option func(*Machine)

// WithInvariantChecks makes every Apply verify all invariants afterwards and
// panic, saying which one broke, if any does. For tests and fuzzing.
func WithInvariantChecks() Option { return func(m *Machine) { m.checkInvariants = true } }

// New returns an empty machine.
func New(opts ...Option) *Machine {
	m := &Machine{
		nextStreamID: 1,
		nextPinID:    1,
		streams:      make(map[uint64]*stream),
		byName:       make(map[string]uint64),
		objects:      btree.NewG(treeDegree, objectLess),
		pins:         btree.NewG(treeDegree, pinLess),
		pinExpiry:    btree.NewG(treeDegree, pinDeadlineLess),
		dedup:        btree.NewG(treeDegree, dedupLess),
		dedupAge:     btree.NewG(treeDegree, dedupDeadlineLess),
		tombstones:   make(map[string]Tombstone),
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// AppliedIndex is the Raft index of the last applied command.
func (m *Machine) AppliedIndex() uint64 { return m.applied }

// Clock is machine time in unix nanoseconds: the largest command stamp seen.
func (m *Machine) Clock() int64 { return m.clock }

// DecodeCommand decodes one log entry. An error here for a committed entry
// means the log holds bytes this binary cannot understand.
func DecodeCommand(data []byte) (*fsmpb.Command, error) {
	cmd := &fsmpb.Command{}
	if err := proto.Unmarshal(data, cmd); err != nil {
		return nil, fmt.Errorf("fsm: decode command: %w", err)
	}
	if cmd.Op == nil {
		return nil, fmt.Errorf("fsm: decode command: no operation (written by a newer metad?)")
	}
	return cmd, nil
}

// ApplyEntry decodes and applies one committed log entry.
//
// It returns an error wrapping ErrUnsupported, and changes nothing, if the
// entry cannot be decoded, names no operation this binary knows, or needs a
// feature level above MaxLevel. The caller must then stop applying: the
// entry is committed, so every replica must apply it; a replica that
// skipped it would silently diverge from the others, and one that guessed
// would be worse. The node stops with the reason in its log until an
// operator runs a binary that understands it.
func (m *Machine) ApplyEntry(index uint64, data []byte) (*fsmpb.Result, error) {
	cmd, err := DecodeCommand(data)
	if err != nil {
		return nil, fmt.Errorf("%w: entry %d: %w", ErrUnsupported, index, err)
	}
	if err := supported(index, cmd); err != nil {
		return nil, err
	}
	return m.Apply(index, cmd), nil
}

// Apply applies one committed command at Raft index `index` and returns its
// result. A refused command returns a Result with Rejection set and changes
// nothing but the clock, pin expiry and the dedup table, identically on
// every replica.
func (m *Machine) Apply(index uint64, cmd *fsmpb.Command) *fsmpb.Result {
	if index <= m.applied {
		panic(fmt.Sprintf("fsm: apply index %d after %d", index, m.applied))
	}
	var before map[uint64]watermarks
	clockBefore := m.clock
	check := m.checkInvariants || (builtInChecks && m.sampledCheck(index))
	if check {
		before = m.watermarks()
	}
	m.applied = index
	if cmd.StampUnixNano > m.clock {
		m.clock = cmd.StampUnixNano
	}
	m.pruneExpiredPins()
	m.pruneDedup()

	res := m.applyDeduplicated(index, cmd)
	if m.kv != nil {
		m.persist()
	}
	if check {
		err := m.checkMonotone(before, clockBefore)
		if err == nil {
			err = m.CheckInvariants()
		}
		if err != nil {
			panic(fmt.Sprintf("fsm: invariant broken after index %d (%T): %v", index, cmd.Op, err))
		}
		if builtInChecks {
			m.nextSampledCheck(index)
		}
	}
	return res
}

func (m *Machine) applyDeduplicated(index uint64, cmd *fsmpb.Command) *fsmpb.Result {
	// An oversized request id is refused by Validate; remembering it would
	// let one command put an unbounded id into the dedup table.
	if cmd.RequestId == "" || len(cmd.RequestId) > MaxRequestIDLen {
		return m.dispatch(index, cmd)
	}
	digest := commandDigest(cmd)
	if e, ok := m.dedup.Get(dedupEntry{requestID: cmd.RequestId}); ok {
		if string(e.digest) != string(digest) {
			return reject(index, fsmpb.RejectCode_REQUEST_ID_REUSED, "request_id",
				"request id %q was used for a different command", cmd.RequestId)
		}
		res := cloneResult(e.result)
		res.Deduplicated = true
		return res
	}
	res := m.dispatch(index, cmd)
	m.remember(cmd.RequestId, digest, res)
	return res
}

// dispatch validates the command and runs its operation's handler.
//
// Handlers name the field at fault relative to their operation's message;
// dispatch prefixes the operation's name, so that every Rejection.Field is
// a dotted path from the Command, as Validate's are (fsm.proto, Rejection).
func (m *Machine) dispatch(index uint64, cmd *fsmpb.Command) *fsmpb.Result {
	if rej := Validate(cmd); rej != nil {
		return &fsmpb.Result{Version: index, Rejection: rej}
	}
	res := m.handle(index, cmd)
	if rej := res.Rejection; rej != nil && rej.Field != "" {
		rej.Field = OpName(cmd) + "." + rej.Field
	}
	return res
}

// opOneof describes Command's op oneof.
var opOneof = (&fsmpb.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("op")

// OpName is the field name of the command's operation, e.g. "commit_append".
func OpName(cmd *fsmpb.Command) string {
	return string(cmd.ProtoReflect().WhichOneof(opOneof).Name())
}

// handle runs the handler of the command's operation: one small function per
// operation, each checking first and mutating only when it accepts.
//
//nolint:gocyclo // one case per operation: the readable form of a table
func (m *Machine) handle(index uint64, cmd *fsmpb.Command) *fsmpb.Result {
	switch op := cmd.Op.(type) {
	case *fsmpb.Command_CreateStream:
		return m.createStream(index, op.CreateStream)
	case *fsmpb.Command_OpenForWrite:
		return m.openForWrite(index, op.OpenForWrite)
	case *fsmpb.Command_CommitAppend:
		return m.commitAppend(index, op.CommitAppend)
	case *fsmpb.Command_PublishGeneration:
		return m.publishGeneration(index, op.PublishGeneration)
	case *fsmpb.Command_RetireGeneration:
		return m.retireGeneration(index, op.RetireGeneration)
	case *fsmpb.Command_Trim:
		return m.trim(index, op.Trim)
	case *fsmpb.Command_Seal:
		return m.seal(index, op.Seal)
	case *fsmpb.Command_DeleteStream:
		return m.deleteStream(index, op.DeleteStream)
	case *fsmpb.Command_RegisterObject:
		return m.registerObject(index, op.RegisterObject)
	case *fsmpb.Command_PinObject:
		return m.pinObject(index, op.PinObject)
	case *fsmpb.Command_ReleasePin:
		return m.releasePin(index, op.ReleasePin)
	case *fsmpb.Command_MarkObjectDeleting:
		return m.markObjectDeleting(index, op.MarkObjectDeleting)
	case *fsmpb.Command_MarkObjectDeleted:
		return m.markObjectDeleted(index, op.MarkObjectDeleted)
	case *fsmpb.Command_ReportCandidateFailure:
		return m.reportCandidateFailure(index, op.ReportCandidateFailure)
	case *fsmpb.Command_RepairGen0:
		return m.repairGen0(index, op.RepairGen0)
	case *fsmpb.Command_SetFeatureLevel:
		return m.setFeatureLevel(index, op.SetFeatureLevel)
	case *fsmpb.Command_LiftQuarantine:
		return m.liftQuarantine(index, op.LiftQuarantine)
	case *fsmpb.Command_AddTombstone:
		return m.addTombstone(index, cmd.StampUnixNano, op.AddTombstone)
	case *fsmpb.Command_LiftTombstone:
		return m.liftTombstone(index, op.LiftTombstone)
	case *fsmpb.Command_SetClusterId:
		return m.setClusterID(index, op.SetClusterId)
	case *fsmpb.Command_CommitObject:
		return m.commitObject(index, op.CommitObject)
	default:
		// Unreachable after Validate, which refuses a nil op; an op type added
		// to the proto without a case here is a programming error.
		panic(fmt.Sprintf("fsm: no handler for %T", op))
	}
}

// reject builds a deterministic refusal.
func reject(index uint64, code fsmpb.RejectCode, field, format string, args ...any) *fsmpb.Result {
	return &fsmpb.Result{Version: index, Rejection: &fsmpb.Rejection{
		Code:    code,
		Field:   field,
		Message: fmt.Sprintf(format, args...),
	}}
}
