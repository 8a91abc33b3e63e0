package fsm

import "time"

// Bounds on commands and retained state. They are constants, not settings:
// every replica must decide identically, so they cannot differ between nodes.
// Raising one is a compatible change; lowering one is not (an entry accepted
// before would be refused on replay).
const (
	// MaxOffset bounds every offset. Offsets are int64-safe so that clients
	// in any language can hold them.
	MaxOffset = uint64(1) << 62

	MaxNameLen      = 256
	MaxKeyLen       = 1024
	MaxIdentityLen  = 256
	MaxHolderLen    = 256
	MaxRequestIDLen = 128
	MaxDetailLen    = 1024

	// MaxRecordsPerCommand bounds one PublishGeneration part; bigger
	// generations are published in parts.
	MaxRecordsPerCommand = 4096
	// MaxSurvivorsPerRecord bounds the sub-ranges of one sparse record.
	MaxSurvivorsPerRecord = 4096
	// MaxAppendsPerObject bounds the appends (streams) of one CommitObject.
	// Servers take a lower bound of their own (api.Config.MaxObjectStreams).
	MaxAppendsPerObject = 10000
	// MaxRepairReplace bounds the records one RepairGen0 may replace.
	MaxRepairReplace = 64

	MinPinTTL = time.Millisecond
	MaxPinTTL = 10 * time.Minute
	// PinGrace is how long a pin stays in the machine after it expired.
	// Garbage collection measures pin lifetimes on the leader's own clock,
	// so a pin must outlive any plausible jump of machine time caused by a
	// leader with a skewed clock; PinGrace is that bound.
	PinGrace = time.Minute

	// DedupTTL is how long a request id is remembered, in machine time.
	DedupTTL = 10 * time.Minute
	// MaxDedupEntries bounds the dedup table; the oldest entries go first.
	MaxDedupEntries = 1 << 17
)
