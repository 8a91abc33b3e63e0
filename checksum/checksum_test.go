package checksum

import (
	"errors"
	"hash/crc32"
	"testing"
)

func TestOfAndCheck(t *testing.T) {
	p := []byte("123456789")
	d := Of(p)
	// The CRC-32C check value of "123456789" (RFC 3720, appendix B.4).
	if !d.Set || d.CRC != 0xe3069283 {
		t.Fatalf("Of(123456789) = %+v, want crc32c:e3069283", d)
	}
	if err := d.Check(p); err != nil {
		t.Fatalf("Check of the same bytes: %v", err)
	}
	q := append([]byte(nil), p...)
	q[4] ^= 1
	if err := d.Check(q); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Check of a flipped byte = %v, want ErrMismatch", err)
	}
	if err := d.Check(p[:8]); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Check of a short read = %v, want ErrMismatch", err)
	}
}

func TestAbsentChecksNothing(t *testing.T) {
	var d Data
	if err := d.Check([]byte("anything")); err != nil {
		t.Fatalf("absent checksum refused bytes: %v", err)
	}
	if d.Ptr() != nil || FromPtr(nil) != d || d.String() != "none" {
		t.Fatalf("absent checksum round trip: %v %v %q", d.Ptr(), FromPtr(nil), d.String())
	}
}

func TestPtrRoundTrip(t *testing.T) {
	for _, crc := range []uint32{0, 1, crc32.Checksum([]byte("x"), Castagnoli), 0xffffffff} {
		d := Data{CRC: crc, Set: true}
		if got := FromPtr(d.Ptr()); got != d {
			t.Fatalf("round trip of %v = %v", d, got)
		}
	}
}
