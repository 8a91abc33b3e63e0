package model

import (
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/metad/metad/jepsen/history"
)

// Porcupine is the model of DESIGN.md G1 for porcupine: one Stream per
// partition (operations on different streams commute), inputs and outputs
// are the history's *Op.
var Porcupine = porcupine.Model{
	Partition: partitionByStream,
	Init:      func() interface{} { return NewStream(0) },
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		s, op := state.(Stream), input.(*history.Op)
		if s.ID == 0 {
			s.ID = op.Stream // Init cannot know its partition's stream
		}
		ok, next, _ := Step(s, op)
		return ok, next
	},
	Equal: func(a, b interface{}) bool {
		x, y := a.(Stream), b.(Stream)
		return x.digest == y.digest && x.End == y.End && x.Trim == y.Trim && x.Epoch == y.Epoch
	},
	Hash:              func(s interface{}) uint64 { return s.(Stream).digest },
	DescribeOperation: func(input, _ interface{}) string { return Describe(input.(*history.Op)) },
	DescribeState:     func(s interface{}) string { return s.(Stream).String() },
}

func partitionByStream(ops []porcupine.Operation) [][]porcupine.Operation {
	byStream := map[uint64][]porcupine.Operation{}
	var ids []uint64
	for _, o := range ops {
		id := o.Input.(*history.Op).Stream
		if _, ok := byStream[id]; !ok {
			ids = append(ids, id)
		}
		byStream[id] = append(byStream[id], o)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([][]porcupine.Operation, len(ids))
	for i, id := range ids {
		out[i] = byStream[id]
	}
	return out
}

// Operations turns a history into porcupine operations. Definite failures
// observed nothing and are left out; a mutation whose outcome is unknown
// returns "never" (after every other operation), so porcupine may place it
// anywhere after its call — or at the very end, where it changes nothing
// anyone saw. A resolve's target was pinned, then rechecked (DESIGN.md §5),
// so its linearization point lies after the pin was applied: the leader's
// machine time at that apply (pin expiry minus TTL) narrows its call time,
// unless a clock offset made machine time differ from the wall clock.
func Operations(h history.History) []porcupine.Operation {
	var last int64
	for _, op := range h.Ops {
		last = max(last, op.Return)
	}
	never := last + int64(time.Second)
	var out []porcupine.Operation
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind == history.KindRegister || op.Kind == history.KindPin || op.Stream == 0 {
			continue
		}
		call, ret := op.Call, op.Return
		switch {
		case op.Status == history.Fail:
			continue
		case !op.IsWrite() && op.Status != history.OK:
			continue
		case op.Status == history.Info:
			ret = never
		}
		if t := pinnedTarget(op); t != nil && !skewed(h.Faults, op) && t.PinStamp > call && t.PinStamp <= ret {
			call = t.PinStamp
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: call, Return: ret})
	}
	return out
}

func pinnedTarget(op *history.Op) *history.Target {
	if op.Kind != history.KindResolve || op.Out == nil {
		return nil
	}
	return op.Out.Target
}

// skewed reports whether machine time may have differed from the wall
// clock while op ran: from a clock fault's start until its heal plus the
// largest offset (machine time never goes back, so it stays ahead until
// the wall clock catches up).
func skewed(faults []history.Fault, op *history.Op) bool {
	for _, f := range faults {
		if f.Kind != "clock" {
			continue
		}
		end := f.End
		if end == 0 {
			return op.Return >= f.Start
		}
		if op.Return >= f.Start && op.Call <= end+f.MaxSkew {
			return true
		}
	}
	return false
}

// Linearizability is the outcome of the porcupine check.
type Linearizability struct {
	Result porcupine.CheckResult
	Info   porcupine.LinearizationInfo
	// Anomalies explains each partition that is not linearizable: the
	// operations that could not be placed after the longest linearizable
	// prefix, and the model's reason.
	Anomalies []string
}

// CheckLinearizable runs porcupine with a timeout.
func CheckLinearizable(h history.History, timeout time.Duration) Linearizability {
	ops := Operations(h)
	res, info := porcupine.CheckOperationsVerbose(Porcupine, ops, timeout)
	l := Linearizability{Result: res, Info: info}
	if res == porcupine.Illegal {
		l.Anomalies = explain(ops)
	}
	return l
}

// explain replays each partition greedily in the order porcupine could
// not beat, to name the first operation no state explains. It is a
// diagnostic, not the verdict: porcupine's search is.
func explain(ops []porcupine.Operation) []string {
	var out []string
	for _, part := range partitionByStream(ops) {
		if res := porcupine.CheckOperations(Porcupine, part); res {
			continue
		}
		out = append(out, explainPartition(part))
	}
	return out
}

// explainPartition reports, for a non-linearizable partition, the
// operations whose outcome the model refuses in every state reachable by
// the operations that completed before they began.
func explainPartition(part []porcupine.Operation) string {
	sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
	stream := part[0].Input.(*history.Op).Stream
	// A sound, cheap witness: step the operations in return order through
	// the model, skipping those it refuses, and report the first refused
	// read that no earlier state explains either.
	byReturn := append([]porcupine.Operation(nil), part...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	s := NewStream(stream)
	for _, o := range byReturn {
		op := o.Input.(*history.Op)
		ok, next, why := Step(s, op)
		if !ok {
			return fmt.Sprintf("stream %d: not linearizable; e.g. op %d (%s, client %d) in state {%v}: %s", stream, op.ID, Describe(op), op.Client, s, why)
		}
		s = next
	}
	return fmt.Sprintf("stream %d: not linearizable (see history.html)", stream)
}

// Visualize writes porcupine's HTML visualisation with the faults shaded.
func Visualize(l Linearizability, faults []history.Fault, w io.Writer) error {
	var ann []porcupine.Annotation
	for _, f := range faults {
		end := f.End
		if end == 0 {
			end = math.MaxInt64 / 2
		}
		ann = append(ann, porcupine.Annotation{Tag: "nemesis", Start: f.Start, End: end,
			Description: f.Kind + ":" + f.Shape, Details: fmt.Sprintf("%v %s", f.Targets, f.Detail), BackgroundColor: "#fde2e2"})
	}
	l.Info.AddAnnotations(ann)
	return porcupine.Visualize(Porcupine, l.Info, w)
}

// Describe is a one-line description of an operation.
func Describe(op *history.Op) string {
	in, out := &op.In, op.Out
	var s string
	switch op.Kind {
	case history.KindAppend:
		s = fmt.Sprintf("append [%d,%d) e%d", in.ExpectedStart, in.End, in.Epoch)
	case history.KindTrim:
		s = fmt.Sprintf("trim %d", in.Offset)
	case history.KindPublish:
		s = fmt.Sprintf("publish %s g%d %v recs=%d complete=%v", in.View, in.Generation, in.Coverage, len(in.Records), in.Complete)
	case history.KindRetire:
		s = fmt.Sprintf("retire %s g%d", in.View, in.Generation)
	case history.KindResolve:
		s = fmt.Sprintf("resolve %s %d", in.View, in.Offset)
	default:
		s = op.Kind
	}
	switch {
	case op.Status != history.OK:
		return fmt.Sprintf("%s -> %s %s", s, op.Status, op.Reason)
	case out == nil:
		return s + " -> ok"
	case op.Kind == history.KindDescribe:
		return fmt.Sprintf("%s -> end=%d trim=%d epoch=%d gens=%d", s, out.CommittedEnd, out.Trim, out.Epoch, len(out.Generations))
	case op.Kind == history.KindResolve && out.Target != nil:
		t := out.Target
		return fmt.Sprintf("%s -> TARGET %s/g%d/%d%v resolved %v", s, t.View, t.Generation, t.Start, t.RecordRange, t.Resolved)
	case op.Kind == history.KindResolve:
		return fmt.Sprintf("%s -> %s (trim %d end %d view_end %d)", s, out.Outcome, out.Trim, out.CommittedEnd, out.ViewEnd)
	}
	return s + " -> ok"
}
