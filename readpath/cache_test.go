package readpath

import (
	"testing"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/resolver"
)

func candidate(stream, gen, start, end, version uint64) resolver.Candidate {
	return resolver.Candidate{Record: fsm.RecordInfo{
		Key:     fsm.IndexKey{Stream: stream, View: fsm.Committed, Generation: gen, Start: start},
		Version: version,
		Range:   fsm.Range{Start: start, End: end},
	}}
}

func TestTargetCacheNewestGenerationCoveringTheOffset(t *testing.T) {
	c := NewCache()
	c.Put(candidate(1, 2, 0, 10, 5))
	c.Put(candidate(1, 0, 0, 20, 3))
	c.Put(candidate(1, 1, 5, 15, 4))
	for _, tc := range []struct{ offset, gen uint64 }{{0, 2}, {9, 2}, {12, 1}, {17, 0}} {
		got, ok := c.Get(1, tc.offset)
		if !ok || got.Record.Key.Generation != tc.gen {
			t.Errorf("Get(1, %d) = generation %d %v, want %d", tc.offset, got.Record.Key.Generation, ok, tc.gen)
		}
	}
	if _, ok := c.Get(1, 20); ok {
		t.Error("offset 20 is outside every entry")
	}
	if _, ok := c.Get(2, 0); ok {
		t.Error("stream 2 has no entries")
	}
}

func TestTargetCachePutReplacesTheSameRecord(t *testing.T) {
	c := NewCache()
	c.Put(candidate(1, 0, 0, 10, 3))
	c.Put(candidate(1, 1, 0, 10, 4))
	c.Put(candidate(1, 0, 0, 10, 7)) // the same record, a newer version
	if n := len(c.streams[1]); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	last := c.streams[1][1]
	if last.Record.Key.Generation != 0 || last.Record.Version != 7 {
		t.Fatalf("newest entry %+v, want generation 0 at version 7", last.Record)
	}
}

func TestTargetCacheBounds(t *testing.T) {
	c := NewCache()
	for start := uint64(0); start < cachePerStream+5; start++ {
		c.Put(candidate(1, 0, start*10, start*10+10, start+1))
	}
	if n := len(c.streams[1]); n != cachePerStream {
		t.Fatalf("%d entries, want %d", n, cachePerStream)
	}
	if _, ok := c.Get(1, 0); ok {
		t.Error("the oldest entry must have been dropped")
	}
	if _, ok := c.Get(1, (cachePerStream+4)*10); !ok {
		t.Error("the newest entry must be kept")
	}
	for s := uint64(2); s <= cacheStreams+10; s++ {
		c.Put(candidate(s, 0, 0, 10, 1))
	}
	if n := len(c.streams); n > cacheStreams {
		t.Fatalf("%d streams, want at most %d", n, cacheStreams)
	}
}

func TestTargetCacheInvalidate(t *testing.T) {
	c := NewCache()
	c.Put(candidate(1, 0, 0, 10, 3))
	c.Put(candidate(1, 1, 0, 10, 4))
	c.Invalidate(resolver.CandidateID{Key: fsm.IndexKey{Stream: 1, View: fsm.Committed, Generation: 1}, Version: 99})
	got, ok := c.Get(1, 5)
	if !ok || got.Record.Key.Generation != 0 {
		t.Fatalf("after invalidating generation 1: %+v %v, want generation 0", got.Record, ok)
	}
	c.Invalidate(resolver.CandidateID{Key: fsm.IndexKey{Stream: 1, View: fsm.Committed}})
	if _, ok := c.streams[1]; ok {
		t.Fatal("a stream without entries must be dropped")
	}
}
