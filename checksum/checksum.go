package checksum

import (
	"errors"
	"fmt"
	"hash/crc32"
)

// Castagnoli is the CRC-32C table every data checksum uses.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrMismatch is wrapped by Check's error: the bytes are not the ones the
// writer committed.
var ErrMismatch = errors.New("data checksum mismatch")

// Data is the data checksum committed with one append or index record.
// Set is false for records from before data checksums: nothing to check.
type Data struct {
	CRC uint32
	Set bool
}

// Of returns the data checksum of p.
func Of(p []byte) Data { return Data{CRC: crc32.Checksum(p, Castagnoli), Set: true} }

// FromPtr converts a protobuf optional field (nil: absent).
func FromPtr(p *uint32) Data {
	if p == nil {
		return Data{}
	}
	return Data{CRC: *p, Set: true}
}

// Ptr converts to a protobuf optional field (nil: absent).
func (d Data) Ptr() *uint32 {
	if !d.Set {
		return nil
	}
	crc := d.CRC
	return &crc
}

// Check reports whether p are the bytes d was computed over: nil when they
// are, or when d is absent; otherwise an error wrapping ErrMismatch that
// gives both values.
func (d Data) Check(p []byte) error {
	if !d.Set {
		return nil
	}
	if got := crc32.Checksum(p, Castagnoli); got != d.CRC {
		return fmt.Errorf("%w: %d bytes have CRC-32C %08x, the writer committed %08x", ErrMismatch, len(p), got, d.CRC)
	}
	return nil
}

// String is "crc32c:xxxxxxxx", or "none" when absent.
func (d Data) String() string {
	if !d.Set {
		return "none"
	}
	return fmt.Sprintf("crc32c:%08x", d.CRC)
}
