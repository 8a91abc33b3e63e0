// Package history is the record of one Jepsen run: every operation a
// recording client invoked, with its inputs, its outcome and its outputs, and
// every fault the nemesis injected. It is plain data: the workload writes it,
// the checkers read it, and it round-trips through JSON Lines so that a run
// can be checked again later (`go run ./jepsen --check DIR`).
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
)

// Status is how an operation ended.
type Status string

const (
	// OK: the call returned a result.
	OK Status = "ok"
	// Rejected: the state machine refused the command deterministically.
	// It is definite (nothing changed) and it observed the state, so the
	// model must agree it would refuse.
	Rejected Status = "rejected"
	// Fail: the call certainly did not take effect and observed nothing.
	Fail Status = "fail"
	// Info: indeterminate; a mutation may or may not have taken effect.
	Info Status = "info"
)

// Op kinds.
const (
	KindRegister = "register" // RegisterObject of a new object
	KindAppend   = "append"   // CommitAppend
	KindTrim     = "trim"
	KindPublish  = "publish" // PublishGeneration (one part)
	KindRetire   = "retire"
	KindOpen     = "open"    // OpenForWrite
	KindReplace  = "replace" // RegisterObject of new bytes under a used key
	// KindReupload is RegisterObject of a new version of a key appends
	// were committed naming: the same bytes again, or other bytes (the old
	// offsets' payloads salted, then offsets a later append names).
	// In.Object is the new version, In.Content its bytes.
	KindReupload = "reupload"
	KindDescribe = "describe"
	KindResolve  = "resolve" // Resolve, then a read of the target's bytes
	KindPin      = "pin"     // an explicit pin held while watching the object
	// KindWatch is one Watch RPC session of a watcher: In.From is the
	// version it resumed after, Out.Events what it delivered.
	KindWatch = "watch"
	// KindEvidence is the final ListEvidence of a stream (read-back).
	KindEvidence = "evidence"
	// KindReport is ReportCandidateFailure: In.Report names the candidate
	// and the kind, Out.Report the server's answer.
	KindReport = "report"
	// KindRead is client.Read by a broker reader: the client library's
	// resolve, read under the target's identity, data checksum check,
	// report and fallback within the view, seen only from outside: its
	// answer (Out.Target, Out.Data) and the failure kinds of the
	// candidates it fell back from (Out.Fallbacks).
	KindRead = "read"
	// KindQuarantine is the end-of-run ListQuarantined (Final), after
	// quarantine had time to heal: Out.Quarantined lists what stayed.
	KindQuarantine = "quarantine"
	// KindObject is CommitObject: a stream-set object (In.Object, In.Size)
	// and one append per stream (In.Appends), all in one command. Its
	// Stream is 0; each append is also recorded as a KindAppend op of its
	// stream with In.Set naming this op, so the per-stream checks see an
	// ordinary append, and model.CheckStreamSets (G16) holds the appends
	// to all or none.
	KindObject = "object"
)

// ObjectAppend is one append of a stream-set object (KindObject).
type ObjectAppend struct {
	Stream        uint64  `json:"stream"`
	Epoch         uint64  `json:"epoch"`
	ExpectedStart uint64  `json:"expect"`
	End           uint64  `json:"end"`
	Bytes         Bytes   `json:"bytes"`
	DataCRC       *uint32 `json:"crc,omitempty"`
}

// Range is the append's offsets.
func (a ObjectAppend) Range() Range { return Range{Start: a.ExpectedStart, End: a.End} }

// Range is the half-open offset range [Start, End).
type Range struct {
	Start uint64 `json:"s"`
	End   uint64 `json:"e"`
}

func (r Range) String() string { return fmt.Sprintf("[%d,%d)", r.Start, r.End) }

// Contains reports whether o lies in r.
func (r Range) Contains(o uint64) bool { return r.Start <= o && o < r.End }

// Object names exact bytes.
type Object struct {
	Key      string `json:"key"`
	Identity string `json:"id"`
}

// Bytes is a byte range of an object.
type Bytes struct {
	Offset uint64 `json:"off"`
	Length uint64 `json:"len"`
}

// Record is one index record as published (and as a target names it).
type Record struct {
	Range     Range   `json:"range"`
	Survivors []Range `json:"surv,omitempty"`
	Object    Object  `json:"obj"`
	Bytes     Bytes   `json:"bytes"`
	Checksum  uint32  `json:"sum"`
	// DataCRC is the CRC-32C of exactly the record's byte range, as its
	// writer computed it (nil: not sent).
	DataCRC *uint32 `json:"crc,omitempty"`
}

// Candidate names one index record at one version (an exclusion).
type Candidate struct {
	View       string `json:"view"`
	Generation uint64 `json:"gen"`
	Start      uint64 `json:"start"`
	Version    uint64 `json:"ver"`
}

// Input is what an operation asked for. Only the fields of its kind are set.
type Input struct {
	RequestID     string  `json:"rid,omitempty"`
	Epoch         uint64  `json:"epoch,omitempty"`
	ExpectedStart uint64  `json:"expect,omitempty"`
	End           uint64  `json:"end,omitempty"`
	Object        *Object `json:"obj,omitempty"`
	Bytes         *Bytes  `json:"bytes,omitempty"`
	// DataCRC is the CRC-32C of the append's byte range the writer sent
	// (append).
	DataCRC    *uint32     `json:"crc,omitempty"`
	Size       uint64      `json:"size,omitempty"`
	IndexGen0  bool        `json:"gen0,omitempty"`
	Offset     uint64      `json:"off,omitempty"`
	View       string      `json:"view,omitempty"`
	Generation uint64      `json:"gen,omitempty"`
	Coverage   *Range      `json:"cov,omitempty"`
	Records    []Record    `json:"recs,omitempty"`
	Complete   bool        `json:"complete,omitempty"`
	Exclude    []Candidate `json:"excl,omitempty"`
	TTLNanos   int64       `json:"ttl,omitempty"`
	// Content names the bytes Put under Object (register/replace): the
	// offsets whose payloads it holds, so checkers can rebuild it.
	Content *Content `json:"content,omitempty"`
	// Of is the version a reupload put a new version beside.
	Of *Object `json:"of,omitempty"`
	// From is the version a watch session resumed after (0: a fresh start).
	From uint64 `json:"from,omitempty"`
	// Report is what a report op says about a candidate.
	Report *Report `json:"report,omitempty"`
	// Appends are a stream-set object's appends (object).
	Appends []ObjectAppend `json:"apps,omitempty"`
	// Set is the id of the object op an append belongs to (0: a
	// CommitAppend of its own).
	Set int `json:"set,omitempty"`
}

// Event is one event a watch session delivered (metad.proto WatchEvent):
// its kind (STARTED, OPENED, APPENDED, TRIMMED, SEALED, PUBLISHED,
// RETIRED, DELETED), its version, and the stream's state after it.
type Event struct {
	Kind    string `json:"k"`
	Version uint64 `json:"v"`
	End     uint64 `json:"end"`
	Trim    uint64 `json:"trim,omitempty"`
	Epoch   uint64 `json:"epoch,omitempty"`
	// APPENDED: the append's offsets and object.
	Range  *Range  `json:"range,omitempty"`
	Object *Object `json:"obj,omitempty"`
	// PUBLISHED, RETIRED.
	View       string `json:"view,omitempty"`
	Generation uint64 `json:"gen,omitempty"`
	// At is when the watcher received it (wall-clock unix nanoseconds).
	At int64 `json:"at"`
}

// Watch event kinds as Event.Kind names them.
const (
	EventStarted   = "STARTED"
	EventOpened    = "OPENED"
	EventAppended  = "APPENDED"
	EventTrimmed   = "TRIMMED"
	EventSealed    = "SEALED"
	EventPublished = "PUBLISHED"
	EventRetired   = "RETIRED"
	EventDeleted   = "DELETED"
)

// Evidence is one append evidence entry as ListEvidence returns it.
type Evidence struct {
	Range   Range  `json:"range"`
	Object  Object `json:"obj"`
	Version uint64 `json:"v"`
	// Bytes and DataCRC are the byte range and the data checksum the
	// evidence holds (nil: none).
	Bytes   *Bytes  `json:"bytes,omitempty"`
	DataCRC *uint32 `json:"crc,omitempty"`
}

// Report is a ReportCandidateFailure request: the candidate (a target the
// reporter resolved), its object, the failure kind (CORRUPT,
// OBJECT_MISSING, IDENTITY_MISMATCH) and whether the reporter knows it is
// false (it had just read the bytes intact).
type Report struct {
	Candidate Candidate `json:"cand"`
	Object    Object    `json:"obj"`
	Kind      string    `json:"kind"`
	False     bool      `json:"false,omitempty"`
}

// Verdict is the server's answer to a report.
type Verdict struct {
	Confirmed   bool   `json:"confirmed"`
	Quarantined bool   `json:"quarantined,omitempty"`
	Verdict     string `json:"verdict,omitempty"`
}

// Quarantined is one record ListQuarantined lists.
type Quarantined struct {
	Stream    uint64    `json:"stream"`
	Candidate Candidate `json:"cand"`
	Range     Range     `json:"range"`
	Object    Object    `json:"obj"`
}

// Content describes an object's bytes: Prefix filler bytes, then the
// payload of every offset in Offsets (in order), then Suffix filler bytes.
type Content struct {
	Offsets []Range `json:"offsets"`
	Prefix  int     `json:"prefix"`
	Suffix  int     `json:"suffix"`
	Salt    uint64  `json:"salt,omitempty"`
	// Salts, when set, is the salt of each entry of Offsets (overriding
	// Salt): a re-uploaded version holds the old offsets salted and new
	// offsets unsalted.
	Salts []uint64 `json:"salts,omitempty"`
}

// Generation is one live generation as DescribeStream lists it.
type Generation struct {
	View      string `json:"view"`
	Number    uint64 `json:"n"`
	Published bool   `json:"pub"`
	Coverage  Range  `json:"cov"`
	Records   uint64 `json:"recs"`
}

// Target is a resolve's pinned target.
type Target struct {
	View        string `json:"view"`
	Stream      uint64 `json:"stream"`
	Generation  uint64 `json:"gen"`
	Start       uint64 `json:"start"`
	Version     uint64 `json:"ver"`
	Checksum    uint32 `json:"sum"`
	RecordRange Range  `json:"range"`
	Resolved    Range  `json:"resolved"`
	Object      Object `json:"obj"`
	Bytes       Bytes  `json:"bytes"`
	PinID       uint64 `json:"pin"`
	// PinStamp is pin expiry minus pin TTL: the leader's machine time when
	// the pin was applied, on the same wall clock as Call and Return.
	PinStamp int64 `json:"pin_stamp"`
	PinTTL   int64 `json:"pin_ttl"`
	// PinShared: the pin also serves other readers and is not released.
	PinShared bool `json:"pin_shared,omitempty"`
	// DataCRC is the target's data_crc32c: the CRC-32C of its byte range
	// as the writer committed it (nil: the server sent none).
	DataCRC *uint32 `json:"crc,omitempty"`
}

// Watch is what a client saw reading an object it held pinned.
type Watch struct {
	// Result: "ok", "mismatch" (bytes differ), "missing" (not found or
	// other identity), "corrupt" (the bytes fail the target's data
	// checksum, or the store found them corrupt), "late" (read after the
	// pin's lease), "error".
	Result string `json:"result"`
	At     int64  `json:"at"`
	Detail string `json:"detail,omitempty"`
}

// Output is what an operation returned.
type Output struct {
	CommittedEnd uint64 `json:"end,omitempty"`
	Trim         uint64 `json:"trim,omitempty"`
	Epoch        uint64 `json:"epoch,omitempty"`
	Version      uint64 `json:"ver,omitempty"`
	Generation   uint64 `json:"gen,omitempty"`
	// AppliedIndex is the Raft index of the state a read was answered
	// from: describe's applied_index, resolve's read_index.
	AppliedIndex uint64 `json:"applied,omitempty"`
	// describe
	Sealed      bool         `json:"sealed,omitempty"`
	Generations []Generation `json:"gens,omitempty"`
	// resolve
	Outcome string  `json:"outcome,omitempty"`
	Target  *Target `json:"target,omitempty"`
	ViewEnd uint64  `json:"view_end,omitempty"`
	// Data is the target's bytes as read under its identity (resolve,
	// read).
	Data string `json:"data,omitempty"`
	// Fallbacks are the failure kinds of the candidates a client.Read
	// fell back from (read).
	Fallbacks []string `json:"fallbacks,omitempty"`
	// Read is the result of reading the target's bytes ("ok" or a Watch
	// result); Watches are later checks of a pinned object (pin).
	Read    *Watch  `json:"read,omitempty"`
	Watches []Watch `json:"watches,omitempty"`
	PinID   uint64  `json:"pin,omitempty"`
	// Expiry is the pin's expiry in machine time (pin).
	Expiry int64 `json:"expiry,omitempty"`
	// Events are what a watch session delivered, in order (watch).
	Events []Event `json:"events,omitempty"`
	// Evidence is a stream's append evidence, in offset order (evidence).
	Evidence []Evidence `json:"evidence,omitempty"`
	// Report is the answer to a report; Quarantined the records a
	// quarantine listing showed (of every stream: the op's Stream is 0).
	Report      *Verdict      `json:"report,omitempty"`
	Quarantined []Quarantined `json:"quarantined,omitempty"`
}

// Op is one operation of the history.
type Op struct {
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Node   string `json:"node,omitempty"`
	Kind   string `json:"kind"`
	Stream uint64 `json:"stream"`
	// Call and Return are wall-clock unix nanoseconds, the clock metad
	// stamps commands with on this machine.
	Call   int64  `json:"call"`
	Return int64  `json:"ret"`
	Status Status `json:"status"`
	// Reason is the metad error reason (UPPER_SNAKE) of a failed call.
	Reason string  `json:"reason,omitempty"`
	Error  string  `json:"err,omitempty"`
	In     Input   `json:"in"`
	Out    *Output `json:"out,omitempty"`
	// Final marks the read-back after the run (G2).
	Final bool `json:"final,omitempty"`
}

// IsWrite reports whether the op kind is a mutation.
func (o *Op) IsWrite() bool {
	switch o.Kind {
	case KindDescribe, KindResolve, KindRead, KindQuarantine, KindWatch, KindEvidence:
		return false
	}
	return true
}

// Fault is one nemesis action, from injection to heal.
type Fault struct {
	Kind    string   `json:"kind"`
	Shape   string   `json:"shape"`
	Targets []string `json:"targets,omitempty"`
	Detail  string   `json:"detail,omitempty"`
	Start   int64    `json:"start"`
	End     int64    `json:"end"`
	// OpsBefore counts successful operations between the previous heal
	// (or the start) and this fault: the run's evidence that it did work.
	OpsBefore int    `json:"ops_before"`
	Error     string `json:"err,omitempty"`
	// MaxSkew is the largest clock offset set (clock faults): machine time
	// may run ahead of the wall clock until End + MaxSkew.
	MaxSkew int64 `json:"max_skew,omitempty"`
	// Object is the object a flapping fault hid, or a corrupt fault
	// rewrote, from Start to End.
	Object *Object `json:"object,omitempty"`
	// Objects are every object a corrupt fault rewrote (Object is the
	// first).
	Objects []Object `json:"objects,omitempty"`
	// Config is what the membership nemeses (amnesia, long-partition) saw
	// of the Raft configuration.
	Config *ConfigSeen `json:"config,omitempty"`
	// LeaderFilled: a disk-full fault filled the disk of the node that led
	// when it began, so writes must have been refused DISK_FULL while it
	// held.
	LeaderFilled bool `json:"leader_filled,omitempty"`
	// Disk is what a disk-error or lose-unsynced fault did to the nodes'
	// fault filesystems.
	Disk *DiskSeen `json:"disk,omitempty"`
}

// DiskSeen is what a disk-error or lose-unsynced fault saw.
type DiskSeen struct {
	// Op is the operation a disk-error fault failed: fsync or write.
	Op string `json:"op,omitempty"`
	// Injected counts the operations failed on the targets' filesystems.
	Injected int `json:"injected,omitempty"`
	// Exited are the targets that stopped themselves after a failure
	// (with their exit status); KeptRunning those that did not.
	Exited      []string `json:"exited,omitempty"`
	KeptRunning []string `json:"kept_running,omitempty"`
	// RolledBackFiles and RolledBackBytes are what lose-unsynced undid:
	// files written since their last sync, and the bytes written to them.
	RolledBackFiles int   `json:"rolled_back_files,omitempty"`
	RolledBackBytes int64 `json:"rolled_back_bytes,omitempty"`
}

// ConfigSeen is the Raft configuration around a fault, each as sorted
// "id:voter" / "id:nonvoter" entries.
type ConfigSeen struct {
	Before []string `json:"before"`
	After  []string `json:"after,omitempty"`
	// During is the first configuration seen while the fault held that
	// differed from Before (none: empty); At is when it was seen.
	During []string `json:"during,omitempty"`
	At     int64    `json:"at,omitempty"`
	// Amnesia: the nodes that were cut off (lagging), and the leaders
	// they reported while the old leader was down (other than it).
	Lagging          []string `json:"lagging,omitempty"`
	LeadersWhileDown []string `json:"leaders_while_down,omitempty"`
}

// Recorder collects operations from concurrent clients.
type Recorder struct {
	mu     sync.Mutex
	ops    []Op
	faults []Fault
	nextID int
	level  uint32
}

// SetLevel records the cluster's feature level the run ran at.
func (r *Recorder) SetLevel(level uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.level = level
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Add stores a completed op and returns its id.
func (r *Recorder) Add(op Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = r.nextID
	r.nextID++
	r.ops = append(r.ops, op)
	return op.ID
}

// Mark changes a stored op.
func (r *Recorder) Mark(id int, f func(*Op)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.ops {
		if r.ops[i].ID == id {
			f(&r.ops[i])
			return
		}
	}
}

// AddFault stores a fault.
func (r *Recorder) AddFault(f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, f)
}

// CountOK counts successful ops invoked in [from, to).
func (r *Recorder) CountOK(from, to int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := range r.ops {
		if o := &r.ops[i]; o.Status == OK && o.Call >= from && o.Return < to {
			n++
		}
	}
	return n
}

// History returns a copy of everything recorded, ops sorted by call time.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := History{Ops: append([]Op(nil), r.ops...), Faults: append([]Fault(nil), r.faults...), Level: r.level}
	sort.SliceStable(h.Ops, func(i, j int) bool { return h.Ops[i].Call < h.Ops[j].Call })
	return h
}

// History is a whole run's record.
type History struct {
	Ops    []Op    `json:"ops"`
	Faults []Fault `json:"faults"`
	// Level is the cluster feature level (StatusResponse
	// cluster_feature_level) the run ran at; 0 if unknown. Semantics the
	// model checks change with it: from level 3 a key holds many versions,
	// and a new one registered breaks no record naming another.
	Level uint32 `json:"level,omitempty"`
}

// VersionsLevel is the feature level from which a key holds many
// versions (metad.proto DescribeObjectResponse.versions).
const VersionsLevel = 3

// KeyVersions reports whether the run's cluster kept many versions per
// key: registering a new version of a key left the others readable.
func (h History) KeyVersions() bool { return h.Level >= VersionsLevel }

// line is one JSONL line: the run's level, an op or a fault.
type line struct {
	Level uint32 `json:"level,omitempty"`
	Op    *Op    `json:"op,omitempty"`
	Fault *Fault `json:"fault,omitempty"`
}

// WriteJSONL writes the level, one line per fault, then one per op.
func (h History) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if h.Level > 0 {
		if err := enc.Encode(line{Level: h.Level}); err != nil {
			return err
		}
	}
	for i := range h.Faults {
		if err := enc.Encode(line{Fault: &h.Faults[i]}); err != nil {
			return err
		}
	}
	for i := range h.Ops {
		if err := enc.Encode(line{Op: &h.Ops[i]}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadJSONL reads what WriteJSONL wrote.
func ReadJSONL(r io.Reader) (History, error) {
	var h History
	dec := json.NewDecoder(r)
	for {
		var l line
		err := dec.Decode(&l)
		if err == io.EOF {
			return h, nil
		}
		if err != nil {
			return h, fmt.Errorf("history: %w", err)
		}
		switch {
		case l.Level > 0:
			h.Level = l.Level
		case l.Op != nil:
			h.Ops = append(h.Ops, *l.Op)
		case l.Fault != nil:
			h.Faults = append(h.Faults, *l.Fault)
		}
	}
}
