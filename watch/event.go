package watch

import "github.com/metad/metad/watch/derive"

// Events are derived by the pure package watch/derive; these are its
// names as the hub and its callers use them.
type (
	// Kind is what changed in a stream.
	Kind = derive.Kind
	// Event is one change of one stream, ordered and resumed by Version.
	Event = derive.Event
)

// The kinds of change (derive.Opened and the rest).
const (
	Opened    = derive.Opened
	Appended  = derive.Appended
	Trimmed   = derive.Trimmed
	Sealed    = derive.Sealed
	Published = derive.Published
	Retired   = derive.Retired
	Deleted   = derive.Deleted
)
