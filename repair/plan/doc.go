// Package plan is repair's pure planner: from one consistent state it
// decides what repairing a COMMITTED generation-0 record takes (PlanOffset)
// and walks streams and evidence in bounded slices for the periodic pass
// (Scan). Values in, values out: no clock, no I/O, no goroutines (the
// architecture test keeps it so), so the same state gives the same plan on
// any node. A rebuild is a conditional RepairGen0 whose premises are
// re-checked when it is applied, so a plan made from stale state cannot
// take effect. Package repair runs it in its leader-only loop.
package plan
