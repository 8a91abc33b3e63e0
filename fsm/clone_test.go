package fsm

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/metad/metad/fsm/fsmpb"
)

// TestCloneResultCopiesEveryField fills every field of Result (and of its
// Rejection) with a non-zero value through reflection, so a field added to
// the proto and forgotten in cloneResult fails here.
func TestCloneResultCopiesEveryField(t *testing.T) {
	r := &fsmpb.Result{}
	fill(r.ProtoReflect())
	c := cloneResult(r)
	if !proto.Equal(r, c) {
		t.Fatalf("clone differs:\n%v\n%v", r, c)
	}
	if c.Rejection == r.Rejection {
		t.Fatal("the clone shares the rejection")
	}
	if c.AppendRejections[0] == r.AppendRejections[0] || c.AppendRejections[0].Rejection == r.AppendRejections[0].Rejection {
		t.Fatal("the clone shares an append rejection")
	}
}

// fill sets every scalar field to a non-zero value and recurses into
// message fields.
func fill(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if f.IsList() && f.Kind() == protoreflect.MessageKind {
			l := m.Mutable(f).List()
			for range 2 {
				e := l.NewElement()
				fill(e.Message())
				l.Append(e)
			}
			continue
		}
		switch f.Kind() {
		case protoreflect.MessageKind:
			fill(m.Mutable(f).Message())
		case protoreflect.BoolKind:
			m.Set(f, protoreflect.ValueOfBool(true))
		case protoreflect.StringKind:
			m.Set(f, protoreflect.ValueOfString("x"+string(f.Name())))
		case protoreflect.EnumKind:
			m.Set(f, protoreflect.ValueOfEnum(1))
		case protoreflect.Uint32Kind:
			m.Set(f, protoreflect.ValueOfUint32(uint32(i+1)))
		case protoreflect.Uint64Kind:
			m.Set(f, protoreflect.ValueOfUint64(uint64(i+1)))
		case protoreflect.Int64Kind:
			m.Set(f, protoreflect.ValueOfInt64(int64(-i-1)))
		default:
			panic("fill: unhandled kind " + f.Kind().String())
		}
	}
}
