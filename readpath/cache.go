package readpath

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/resolver"
)

// Bounds of the resolve cache.
const (
	cacheStreams   = 4096 // streams with entries
	cachePerStream = 16   // entries per stream
)

// Cache is the resolver's positive-only Cache: per
// stream, a few recently resolved COMMITTED candidates. An entry is only a
// hint — the resolver pins it and rechecks linearizably — so a stale entry
// can waste a pin but never change an answer. Entries are dropped when the
// resolver or a failure report invalidates them; nothing negative is ever
// stored.
type Cache struct {
	mu      sync.Mutex
	streams map[uint64][]resolver.Candidate // newest last
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{streams: map[uint64][]resolver.Candidate{}}
}

// Get returns the newest-generation entry covering offset.
func (c *Cache) Get(stream, offset uint64) (resolver.Candidate, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best resolver.Candidate
	found := false
	for _, e := range c.streams[stream] {
		if e.Record.Range.Contains(offset) && (!found || e.Record.Key.Generation > best.Record.Key.Generation) {
			best, found = e, true
		}
	}
	return best, found
}

// Put remembers a candidate, replacing the entry of the same record. It
// runs after every successful resolve, so remembering a record that is
// already cached (the common case) moves it in place, without allocating.
func (c *Cache) Put(cand resolver.Candidate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := cand.Record.Key.Stream
	entries, ok := c.streams[s]
	if !ok && len(c.streams) >= cacheStreams {
		for victim := range c.streams { // any stream: map order is arbitrary
			delete(c.streams, victim)
			break
		}
	}
	for i, e := range entries {
		if e.Record.Key == cand.Record.Key {
			copy(entries[i:], entries[i+1:])
			entries[len(entries)-1] = cand
			return
		}
	}
	entries = append(entries, cand)
	if len(entries) > cachePerStream {
		entries = slices.Delete(entries, 0, len(entries)-cachePerStream)
	}
	c.streams[s] = entries
}

// Invalidate drops the entry of the candidate's record, whatever version.
func (c *Cache) Invalidate(id resolver.CandidateID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id.Key)
}

func (c *Cache) dropLocked(key fsm.IndexKey) {
	entries := c.streams[key.Stream]
	kept := entries[:0:0]
	for _, e := range entries {
		if e.Record.Key != key {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		delete(c.streams, key.Stream)
		return
	}
	c.streams[key.Stream] = kept
}

// countingCache counts the cache's hits, misses and invalidations.
type countingCache struct {
	c      *Cache
	events *prometheus.CounterVec
}

func (c countingCache) Get(stream, offset uint64) (resolver.Candidate, bool) {
	cand, ok := c.c.Get(stream, offset)
	if ok {
		c.events.WithLabelValues("hit").Inc()
	} else {
		c.events.WithLabelValues("miss").Inc()
	}
	return cand, ok
}

func (c countingCache) Put(cand resolver.Candidate) { c.c.Put(cand) }

func (c countingCache) Invalidate(id resolver.CandidateID) {
	c.events.WithLabelValues("invalidate").Inc()
	c.c.Invalidate(id)
}
