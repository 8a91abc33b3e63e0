package membership

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func TestMetaMaxSizeMatchesMemberlist(t *testing.T) {
	if metaMaxSize != memberlist.MetaMaxSize {
		t.Fatalf("metaMaxSize %d, memberlist.MetaMaxSize %d", metaMaxSize, memberlist.MetaMaxSize)
	}
}

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []Meta{
		{RaftAddr: "127.0.0.1:7421", GRPCAddr: "127.0.0.1:7420"},
		{RaftAddr: "10.1.2.3:1", GRPCAddr: "[::1]:65535", Expect: 5, Bootstrapped: true},
		{RaftAddr: "10.1.2.3:1", GRPCAddr: "10.1.2.3:2", Leaving: true},
		{RaftAddr: longAddr(), GRPCAddr: longAddr(), Expect: MaxBootstrapExpect, Bootstrapped: true},
	} {
		b, err := EncodeMeta(m)
		if err != nil {
			t.Fatalf("encode %+v: %v", m, err)
		}
		if len(b) > memberlist.MetaMaxSize {
			t.Fatalf("encoded %d bytes > %d", len(b), memberlist.MetaMaxSize)
		}
		got, err := DecodeMeta(b)
		if err != nil {
			t.Fatalf("decode %x: %v", b, err)
		}
		m.Version = MetaVersion
		if got != m {
			t.Fatalf("round trip: got %+v want %+v", got, m)
		}
	}
}

// longAddr is a MaxAddrLen-byte host:port, the largest a meta may carry.
func longAddr() string {
	return strings.Repeat("h", MaxAddrLen-5) + ":7421"
}

func TestEncodeMetaRefusesWhatDecodeRefuses(t *testing.T) {
	for _, m := range []Meta{
		{RaftAddr: "", GRPCAddr: "127.0.0.1:1"},
		{RaftAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:0"},
		{RaftAddr: longAddr() + "1", GRPCAddr: "127.0.0.1:1"},
		{RaftAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:1", Expect: MaxBootstrapExpect + 1},
		{RaftAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:1", Expect: -1},
	} {
		if _, err := EncodeMeta(m); !errors.Is(err, ErrBadMeta) {
			t.Errorf("EncodeMeta(%+v) = %v, want ErrBadMeta", m, err)
		}
	}
}

func TestDecodeMetaRejects(t *testing.T) {
	good, err := EncodeMeta(Meta{RaftAddr: "127.0.0.1:7421", GRPCAddr: "127.0.0.1:7420", Expect: 3})
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := map[string][]byte{
		"empty":          nil,
		"short":          good[:4],
		"version 0":      mutate(func(b []byte) []byte { b[0] = 0; return b }),
		"version 2":      mutate(func(b []byte) []byte { b[0] = 2; return b }),
		"unknown flag":   mutate(func(b []byte) []byte { b[1] = 0x04; return b }),
		"expect too big": mutate(func(b []byte) []byte { b[2] = MaxBootstrapExpect + 1; return b }),
		"truncated":      good[:len(good)-1],
		"trailing":       append(bytes.Clone(good), 0),
		"raft len lies":  mutate(func(b []byte) []byte { b[3] = 250; return b }),
		"not host:port":  mutate(func(b []byte) []byte { b[4+9] = 'x'; return b }), // ':' of raft addr
		"oversized":      bytes.Repeat([]byte{1}, 600),
	}
	for name, b := range cases {
		if _, err := DecodeMeta(b); !errors.Is(err, ErrBadMeta) {
			t.Errorf("%s: DecodeMeta(%x) = %v, want ErrBadMeta", name, b, err)
		}
	}
}

// FuzzDecodeMeta: decoding arbitrary bytes never panics, and whatever
// decodes re-encodes to the same bytes (the encoding is canonical).
func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []Meta{
		{RaftAddr: "127.0.0.1:7421", GRPCAddr: "127.0.0.1:7420", Expect: 3, Bootstrapped: true},
		{RaftAddr: "a:1", GRPCAddr: "b:2"},
	} {
		b, _ := EncodeMeta(m)
		f.Add(b)
	}
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrBadMeta) {
				t.Fatalf("error %v does not wrap ErrBadMeta", err)
			}
			return
		}
		again, err := EncodeMeta(m)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", m, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("not canonical: %x -> %+v -> %x", b, m, again)
		}
	})
}
