package statestore

import (
	"fmt"
	"testing"
)

// BenchmarkCommit: 100 Sets of about 60 bytes and a Commit, as an
// applied Raft batch does. ns/op is per Commit.
func BenchmarkCommit(b *testing.B) {
	s, err := Open(b.TempDir(), Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	key := make([]byte, 0, 24)
	val := make([]byte, 40)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for range 100 {
			key = fmt.Appendf(key[:0], "key%012d", n)
			n++
			s.Set(key, val)
		}
		s.Commit()
	}
}

// BenchmarkGet: point reads of a committed key among 100,000, from the
// block cache after the first reads.
func BenchmarkGet(b *testing.B) {
	s, err := Open(b.TempDir(), Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const keys = 100_000
	for i := range keys {
		s.Set(fmt.Appendf(nil, "key%012d", i), make([]byte, 40))
		if i%1000 == 999 {
			s.Commit()
		}
	}
	s.Commit()
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	key := make([]byte, 0, 24)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		key = fmt.Appendf(key[:0], "key%012d", (i*7919)%keys)
		i++
		if _, ok := s.Get(key); !ok {
			b.Fatalf("key %s missing", key)
		}
	}
}
