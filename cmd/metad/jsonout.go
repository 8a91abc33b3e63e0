package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The one JSON dialect of every `-o json`: snake_case keys (the proto field
// names), 64-bit integers as JSON numbers (protojson quotes them, which jq
// and most scripts then compare as strings), enums by name, timestamps in
// RFC 3339 and durations as protojson writes them ("1.5s").

// protoJSONValue turns msg into a plain value in that dialect, ready for
// encoding/json or for a command to add fields to.
func protoJSONValue(msg proto.Message) (any, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(msg)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return unquoteInts(v, msg.ProtoReflect().Descriptor()), nil
}

// writeProtoJSON writes msg in the dialect, indented.
func writeProtoJSON(w io.Writer, msg proto.Message) error {
	v, err := protoJSONValue(msg)
	if err != nil {
		return err
	}
	return writeJSON(w, v)
}

// writeProtoJSONLine writes msg in the dialect on one line (streams of events).
func writeProtoJSONLine(w io.Writer, msg proto.Message) error {
	v, err := protoJSONValue(msg)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// unquoteInts walks v (protojson's output for a message of type md) and
// turns every quoted 64-bit integer back into a number.
func unquoteInts(v any, md protoreflect.MessageDescriptor) any {
	obj, ok := v.(map[string]any)
	if !ok || md == nil || isWellKnown(md) {
		return v
	}
	for key, val := range obj {
		fd := md.Fields().ByName(protoreflect.Name(key))
		if fd == nil {
			continue
		}
		switch {
		case fd.IsMap():
			if m, ok := val.(map[string]any); ok {
				for k, e := range m {
					m[k] = unquoteField(e, fd.MapValue())
				}
			}
		case fd.IsList():
			if l, ok := val.([]any); ok {
				for i, e := range l {
					l[i] = unquoteField(e, fd)
				}
			}
		default:
			obj[key] = unquoteField(val, fd)
		}
	}
	return obj
}

func unquoteField(v any, fd protoreflect.FieldDescriptor) any {
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if s, ok := v.(string); ok {
			return json.Number(s)
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return unquoteInts(v, fd.Message())
	}
	return v
}

// isWellKnown reports the google.protobuf types protojson writes in their
// own form (Timestamp as RFC 3339, Duration as "1.5s", wrappers as values).
func isWellKnown(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile() != nil && md.ParentFile().Package() == "google.protobuf"
}

// jsonDuration is a duration in a command's own JSON (not a proto
// message's), written as protojson writes a google.protobuf.Duration.
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return protojson.Marshal(durationpb.New(time.Duration(d)))
}
