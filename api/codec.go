package api

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A request grpc cannot decode (invalid UTF-8 in a string field, a
// truncated or malformed message) would reach the client as INTERNAL
// "grpc: failed to unmarshal the received message", with no ErrorInfo and
// no field: grpc wraps every codec error that way. G12 wants
// InvalidArgument naming the field, so the server's codec never fails a
// decode: it leaves the message empty and writes the failure into the
// message's unknown fields under decodeFailureField, and the interceptors
// below refuse the call with InvalidArgument before any handler runs. The
// failure travels with the message itself, so nothing is kept aside and
// nothing leaks when an earlier interceptor refuses the call first.

// decodeFailureField is the field number, far above any metad field, that
// carries "field path \x00 message" of a failed decode.
const decodeFailureField protowire.Number = protowire.MaxValidNumber

// decodeCodec is the proto codec with the failure handling above.
type decodeCodec struct{ base encoding.CodecV2 }

func newDecodeCodec() decodeCodec { return decodeCodec{base: encoding.GetCodecV2("proto")} }

func (c decodeCodec) Name() string { return c.base.Name() }

func (c decodeCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c decodeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.base.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	raw := data.Materialize()
	field, msg := locateDecodeFailure(m.ProtoReflect().Descriptor(), raw, err)
	proto.Reset(m)
	marker := protowire.AppendTag(nil, decodeFailureField, protowire.BytesType)
	marker = protowire.AppendBytes(marker, []byte(field+"\x00"+msg))
	m.ProtoReflect().SetUnknown(marker)
	return nil
}

// decodeFailure returns the failure the codec recorded in m, if any.
func decodeFailure(m any) (field, msg string, failed bool) {
	pm, ok := m.(proto.Message)
	if !ok {
		return "", "", false
	}
	b := pm.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", "", false
		}
		b = b[n:]
		if num == decodeFailureField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b)
			field, msg, _ = strings.Cut(string(v), "\x00")
			return field, msg, true
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return "", "", false
		}
		b = b[n:]
	}
	return "", "", false
}

// locateDecodeFailure names the field at fault: the first string field
// (at any depth) holding invalid UTF-8, or "request" when the bytes are not
// a well-formed message at all.
func locateDecodeFailure(md protoreflect.MessageDescriptor, raw []byte, err error) (field, msg string) {
	if path, ok := invalidUTF8Field(md, raw, 0); ok {
		return path, "is not valid UTF-8"
	}
	return "request", fmt.Sprintf("is not a valid %s message: %v", md.FullName(), err)
}

// maxDecodeDepth bounds the search through nested messages; the server's
// message size bound already bounds the work per level.
const maxDecodeDepth = 32

func invalidUTF8Field(md protoreflect.MessageDescriptor, b []byte, depth int) (string, bool) {
	if depth > maxDecodeDepth {
		return "", false
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return "", false
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		switch {
		case fd == nil:
		case fd.Kind() == protoreflect.StringKind && !utf8.Valid(v):
			return string(fd.Name()), true
		case fd.Kind() == protoreflect.MessageKind:
			if path, ok := invalidUTF8Field(fd.Message(), v, depth+1); ok {
				return string(fd.Name()) + "." + path, true
			}
		}
	}
	return "", false
}

// refuseUndecodable is the first unary interceptor: a request the codec
// could not decode is refused with InvalidArgument naming the field.
func refuseUndecodable(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if field, msg, failed := decodeFailure(req); failed {
		return nil, invalidArgument(field, "%s: %s %s", info.FullMethod, field, msg)
	}
	return h(ctx, req)
}

// refuseUndecodableStream does the same for every message a streaming
// handler receives.
func refuseUndecodableStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, decodeCheckedStream{ServerStream: ss, method: info.FullMethod})
}

type decodeCheckedStream struct {
	grpc.ServerStream
	method string
}

func (s decodeCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if field, msg, failed := decodeFailure(m); failed {
		return invalidArgument(field, "%s: %s %s", s.method, field, msg)
	}
	return nil
}
