package reasons

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/metad/metad/api/metadpb"
)

// enumValues walks the Reason enum's descriptor, so a value added to the
// proto is seen without editing any list.
func enumValues() []protoreflect.EnumValueDescriptor {
	vals := metadpb.Reason(0).Descriptor().Values()
	out := make([]protoreflect.EnumValueDescriptor, 0, vals.Len())
	for i := range vals.Len() {
		if vals.Get(i).Number() != 0 {
			out = append(out, vals.Get(i))
		}
	}
	return out
}

// TestEveryReasonHasARowAndEveryRowAReason: the table and the enum are
// the same set, and REASON_UNSPECIFIED is in neither.
func TestEveryReasonHasARowAndEveryRowAReason(t *testing.T) {
	vals := enumValues()
	for _, v := range vals {
		if _, ok := table[metadpb.Reason(v.Number())]; !ok {
			t.Errorf("reason %s has no row in the error table", v.Name())
		}
	}
	for r := range table {
		if _, ok := metadpb.Reason_name[int32(r)]; !ok || r == metadpb.Reason_REASON_UNSPECIFIED {
			t.Errorf("row %d is not a reason of the enum", r)
		}
	}
	if len(table) != len(vals) {
		t.Errorf("%d rows for %d reasons", len(table), len(vals))
	}
}

// TestLookupByWireName: a reason's wire name finds its row; an unknown
// name, and the unspecified value's, find none.
func TestLookupByWireName(t *testing.T) {
	for _, v := range enumValues() {
		r, row, ok := Lookup(string(v.Name()))
		if !ok || r != metadpb.Reason(v.Number()) || row.Code != table[r].Code {
			t.Errorf("Lookup(%s) = %v, %+v, %v", v.Name(), r, row, ok)
		}
	}
	for _, name := range []string{"SOMETHING_NEW", "REASON_UNSPECIFIED", ""} {
		if _, _, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) found a row", name)
		}
	}
}

// TestSentinelTextsAreDistinct: each reason's own sentinel reads
// differently, so an error message names its reason.
func TestSentinelTextsAreDistinct(t *testing.T) {
	seen := map[string]metadpb.Reason{}
	for r, row := range table {
		if row.Sentinel == "" {
			continue
		}
		if other, dup := seen[row.Sentinel]; dup {
			t.Errorf("%v and %v share the sentinel text %q", r, other, row.Sentinel)
		}
		seen[row.Sentinel] = r
	}
}
