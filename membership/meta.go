package membership

import (
	"errors"
	"fmt"
)

// MetaVersion is the node-metadata format of release 0.1.0, which this
// build writes while it knows no cluster id, and always reads.
//
// MetaVersionClusterID is version 1 followed by the cluster id. Release
// 0.1.0 refuses it (it rejects any other version and trailing bytes), so
// it is written only by a node that knows its cluster id, which exists
// only once the cluster is at feature level 2, that is, once no 0.1.0
// server remains (fsm/level.go). A later format must likewise be read by
// every release that may still share the gossip pool before it is written.
const (
	MetaVersion          = 1
	MetaVersionClusterID = 2
)

// metaMaxSize is memberlist.MetaMaxSize, restated so that a test can check
// the two agree without every caller importing memberlist.
const metaMaxSize = 512

const (
	metaFlagBootstrapped = 1 << 0
	metaFlagLeaving      = 1 << 1
	metaKnownFlags       = metaFlagBootstrapped | metaFlagLeaving
)

// ErrBadMeta is wrapped by every DecodeMeta error.
var ErrBadMeta = errors.New("membership: bad node metadata")

// EncodeMeta encodes m in the version-1 layout:
//
//	byte 0     version (1)
//	byte 1     flags (bit 0: bootstrapped, bit 1: leaving; others zero)
//	byte 2     expect (0..MaxBootstrapExpect)
//	byte 3     len(raftAddr), then raftAddr
//	byte 4+r   len(grpcAddr), then grpcAddr
//
// With a ClusterID it is version 2: the same, then len(clusterID) and
// clusterID. It is at most 5 + 2×MaxAddrLen + 1 + MaxClusterIDLen = 470
// bytes, under memberlist's 512. It refuses anything DecodeMeta would
// refuse, so a node never advertises metadata its peers drop.
func EncodeMeta(m Meta) ([]byte, error) {
	if err := validateMeta(m); err != nil {
		return nil, err
	}
	var flags byte
	if m.Bootstrapped {
		flags |= metaFlagBootstrapped
	}
	if m.Leaving {
		flags |= metaFlagLeaving
	}
	version := byte(MetaVersion)
	if m.ClusterID != "" {
		version = MetaVersionClusterID
	}
	b := make([]byte, 0, 6+len(m.RaftAddr)+len(m.GRPCAddr)+len(m.ClusterID))
	b = append(b, version, flags, byte(m.Expect))
	b = append(b, byte(len(m.RaftAddr)))
	b = append(b, m.RaftAddr...)
	b = append(b, byte(len(m.GRPCAddr)))
	b = append(b, m.GRPCAddr...)
	if m.ClusterID != "" {
		b = append(b, byte(len(m.ClusterID)))
		b = append(b, m.ClusterID...)
	}
	return b, nil
}

// DecodeMeta decodes and validates metadata from the wire. Every error
// wraps ErrBadMeta; the caller ignores that node and logs why.
func DecodeMeta(b []byte) (Meta, error) {
	bad := func(format string, args ...any) (Meta, error) {
		return Meta{}, fmt.Errorf("%w: "+format, append([]any{ErrBadMeta}, args...)...)
	}
	if len(b) < 5 {
		return bad("%d bytes, want at least 5", len(b))
	}
	if len(b) > metaMaxSize {
		return bad("%d bytes, more than %d", len(b), metaMaxSize)
	}
	if b[0] != MetaVersion && b[0] != MetaVersionClusterID {
		return bad("version %d, this build reads %d and %d", b[0], MetaVersion, MetaVersionClusterID)
	}
	if b[1]&^metaKnownFlags != 0 {
		return bad("unknown flags %#x", b[1])
	}
	m := Meta{Version: int(b[0]), Expect: int(b[2]),
		Bootstrapped: b[1]&metaFlagBootstrapped != 0, Leaving: b[1]&metaFlagLeaving != 0}
	rest := b[3:]
	var ok bool
	if m.RaftAddr, rest, ok = cutString(rest); !ok {
		return bad("truncated raft address")
	}
	if m.GRPCAddr, rest, ok = cutString(rest); !ok {
		return bad("truncated gRPC address")
	}
	if m.Version == MetaVersionClusterID {
		if m.ClusterID, rest, ok = cutString(rest); !ok {
			return bad("truncated cluster id")
		}
		if m.ClusterID == "" {
			return bad("version %d without a cluster id", MetaVersionClusterID)
		}
	}
	if len(rest) != 0 {
		return bad("%d trailing bytes", len(rest))
	}
	if err := validateMeta(m); err != nil {
		return Meta{}, err
	}
	return m, nil
}

func cutString(b []byte) (string, []byte, bool) {
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return "", nil, false
	}
	n := int(b[0])
	return string(b[1 : 1+n]), b[1+n:], true
}

func validateMeta(m Meta) error {
	if m.Expect < 0 || m.Expect > MaxBootstrapExpect {
		return fmt.Errorf("%w: expect %d, want 0..%d", ErrBadMeta, m.Expect, MaxBootstrapExpect)
	}
	if err := validateHostPort(m.RaftAddr, false); err != nil {
		return fmt.Errorf("%w: raft address %q: %w", ErrBadMeta, m.RaftAddr, err)
	}
	if err := validateHostPort(m.GRPCAddr, false); err != nil {
		return fmt.Errorf("%w: gRPC address %q: %w", ErrBadMeta, m.GRPCAddr, err)
	}
	if m.ClusterID != "" {
		if err := validateClusterID(m.ClusterID); err != nil {
			return fmt.Errorf("%w: cluster id %q: %w", ErrBadMeta, m.ClusterID, err)
		}
	}
	return nil
}
