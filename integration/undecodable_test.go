package integration

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/internal/proc"
)

// rawCodec sends and receives bytes as they are, so a test can put on the
// wire what no generated client would.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

// stringFieldPaths lists every string field reachable from md, as the
// field-number path to it and its dotted name, without revisiting a
// message type already on the path.
func stringFieldPaths(md protoreflect.MessageDescriptor, onPath map[protoreflect.FullName]bool) (nums [][]protowire.Number, names []string) {
	onPath[md.FullName()] = true
	defer delete(onPath, md.FullName())
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.Kind() == protoreflect.StringKind:
			nums = append(nums, []protowire.Number{fd.Number()})
			names = append(names, string(fd.Name()))
		case fd.Kind() == protoreflect.MessageKind && !onPath[fd.Message().FullName()]:
			sub, subNames := stringFieldPaths(fd.Message(), onPath)
			for j := range sub {
				nums = append(nums, append([]protowire.Number{fd.Number()}, sub[j]...))
				names = append(names, string(fd.Name())+"."+subNames[j])
			}
		}
	}
	return nums, names
}

// withInvalidUTF8 encodes a message whose only content is the string field
// at path, holding bytes that are not UTF-8.
func withInvalidUTF8(path []protowire.Number) []byte {
	b := []byte("\xff\xfe bad")
	for i := len(path) - 1; i >= 0; i-- {
		b = protowire.AppendBytes(protowire.AppendTag(nil, path[i], protowire.BytesType), b)
	}
	return b
}

// TestUndecodableRequestsNameTheField drives raw bytes at every string field
// of every RPC of every service (invalid UTF-8), and a message that is not
// protobuf at all: each is refused with InvalidArgument whose ErrorInfo
// names the field, never INTERNAL, and the server keeps serving (G12).
func TestUndecodableRequestsNameTheField(t *testing.T) {
	c := proc.New(t, 1)
	c.StartAll()
	formed(t, c, 1)
	conn, err := grpc.NewClient(c.Nodes[0].GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// metad.v1.Peer is called as a node (the peer secret), so that it
	// reaches decoding.
	peerConn, err := grpc.NewClient(c.Nodes[0].GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})), grpc.WithPerRPCCredentials(auth.PeerSecretCredentials(c.PeerSecret())))
	if err != nil {
		t.Fatal(err)
	}
	defer peerConn.Close()
	fd := metadpb.File_metad_proto
	checked := 0
	for si := 0; si < fd.Services().Len(); si++ {
		svc := fd.Services().Get(si)
		for mi := 0; mi < svc.Methods().Len(); mi++ {
			m := svc.Methods().Get(mi)
			method := "/" + string(svc.FullName()) + "/" + string(m.Name())
			paths, names := stringFieldPaths(m.Input(), map[protoreflect.FullName]bool{})
			paths, names = append(paths, nil), append(names, "request")
			for i, path := range paths {
				body := []byte{0xff} // not a tag: not a message at all
				if path != nil {
					body = withInvalidUTF8(path)
				}
				cc := conn
				if string(svc.FullName()) == metadpb.Peer_ServiceDesc.ServiceName {
					cc = peerConn
				}
				err := invokeRaw(ctxT(t, 10*time.Second), cc, m, method, body)
				st, _ := status.FromError(err)
				if st.Code() != codes.InvalidArgument || fieldOf(st) != names[i] {
					t.Errorf("%s with bad %s: %v (field %q), want InvalidArgument naming %q",
						method, names[i], err, fieldOf(st), names[i])
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d cases: the descriptor walk found too few fields", checked)
	}
	if !c.Running(0) {
		t.Fatal("the server died")
	}
	formed(t, c, 1)
}

func invokeRaw(ctx context.Context, conn *grpc.ClientConn, m protoreflect.MethodDescriptor, method string, body []byte) error {
	var out []byte
	if !m.IsStreamingServer() && !m.IsStreamingClient() {
		return conn.Invoke(ctx, method, &body, &out)
	}
	desc := &grpc.StreamDesc{ServerStreams: m.IsStreamingServer(), ClientStreams: m.IsStreamingClient()}
	s, err := conn.NewStream(ctx, desc, method)
	if err != nil {
		return err
	}
	if err := s.SendMsg(&body); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if err := s.RecvMsg(&out); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("stream ended without an error")
			}
			return err
		}
	}
}
