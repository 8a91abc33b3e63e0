package repair

import pure "github.com/metad/metad/repair/plan"

// The planner is the pure package repair/plan; these are its names as the
// loop and its callers use them.
type (
	// State is the read-only view planning needs; *fsm.Machine has it.
	State = pure.State
	// Verdict is what planning concluded about one committed offset.
	Verdict = pure.Verdict
	// Action is one planned repair.
	Action = pure.Action
	// Cursor is where a scan resumes.
	Cursor = pure.Cursor
)

// The verdicts (plan.Healthy and the rest).
const (
	Healthy         = pure.Healthy
	Rebuild         = pure.Rebuild
	ProvenTrimmed   = pure.ProvenTrimmed
	ProvenEOF       = pure.ProvenEOF
	StreamMissing   = pure.StreamMissing
	EvidenceMissing = pure.EvidenceMissing
	ObjectUnusable  = pure.ObjectUnusable
	Reverify        = pure.Reverify
)

// PlanOffset is plan.PlanOffset.
func PlanOffset(st State, stream, offset uint64) Action { return pure.PlanOffset(st, stream, offset) }

// Scan is plan.Scan.
func Scan(st State, from Cursor, budget int) ([]Action, Cursor) { return pure.Scan(st, from, budget) }
