package watch

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"

	"github.com/metad/metad/watch/derive"
)

// Config bounds the hub.
type Config struct {
	// History is how many recent events the hub keeps per stream, for
	// watchers that resume: at most about 150 bytes each (plus the object
	// key), so 40 KiB for a stream with a full ring at the default. Default
	// 256; range [1, 1<<20].
	History int
	// MaxWatchers bounds the watchers of all streams together. Default
	// 10000; range [1, 1<<20].
	MaxWatchers int
	// Buffer is each watcher's queue of events not yet taken. A watcher
	// whose queue is full when an event arrives is cut off (ErrSlowConsumer)
	// rather than buffered without bound. Default 256; range [1, 1<<16].
	Buffer int
	// StaleAfter: a node that has had no leader, or no contact from one,
	// for this long ends its watches (resumably) so that their clients
	// resume at a member that still follows the cluster, instead of
	// waiting in silence on a partitioned one. Default 5s; range
	// [100ms, 10m].
	StaleAfter time.Duration
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{History: 256, MaxWatchers: 10000, Buffer: 256, StaleAfter: 5 * time.Second}
}

// Validate reports every out-of-range setting.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("watch: "+format, args...))
		}
	}
	check(c.History >= 1 && c.History <= 1<<20, "History %d outside [1, 1048576]", c.History)
	check(c.MaxWatchers >= 1 && c.MaxWatchers <= 1<<20, "MaxWatchers %d outside [1, 1048576]", c.MaxWatchers)
	check(c.Buffer >= 1 && c.Buffer <= 1<<16, "Buffer %d outside [1, 65536]", c.Buffer)
	check(c.StaleAfter >= 100*time.Millisecond && c.StaleAfter <= 10*time.Minute, "StaleAfter %s outside [100ms, 10m]", c.StaleAfter)
	return errors.Join(errs...)
}

// Sentinel errors; classify with errors.Is.
var (
	// ErrCompacted: the events after the version asked for are no longer
	// all held here (older than the ring, or before this node's snapshot).
	ErrCompacted = errors.New("watch: history after that version is no longer held")
	// ErrSlowConsumer: the watcher's queue filled up; it was cut off.
	ErrSlowConsumer = errors.New("watch: consumer too slow, cut off")
	// ErrTooManyWatchers: MaxWatchers reached.
	ErrTooManyWatchers = errors.New("watch: too many watchers")
	// ErrReset: this node's state was replaced by a snapshot from the
	// leader, so the events in between were never seen here.
	ErrReset = errors.New("watch: state replaced by a snapshot")
)

// Hub receives every applied command (it is raftstore's ApplyObserver),
// keeps a bounded ring of recent events per stream, and hands new events to
// the watchers of that stream only.
//
// Applied and Restored are called by the apply goroutine under the state
// machine's write lock; Subscribe must be called under its read lock, which
// is what makes a subscription's backlog and its live events meet with
// neither gap nor overlap.
type Hub struct {
	cfg Config

	mu sync.Mutex
	// floor is the index of the snapshot the state was last restored from:
	// events at or below it were never seen by this hub.
	floor    uint64
	feeds    map[uint64]*feed
	watchers int

	cutoffs atomic.Uint64
}

// feed is one stream's recent history and watchers.
type feed struct {
	ring []Event // grows to History, then wraps at head
	head int     // the oldest event once the ring is full
	// evicted is the version of the newest event dropped from the ring.
	evicted  uint64
	watchers []*Watcher
}

// New returns an empty hub.
func New(cfg Config) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Hub{cfg: cfg, feeds: make(map[uint64]*feed)}, nil
}

// Applied records the change a command applied at index made, if any, and
// fans it out to the stream's watchers. m is the machine after the command.
func (h *Hub) Applied(m *fsm.Machine, index uint64, cmd *fsmpb.Command, res *fsmpb.Result) {
	if op, ok := cmd.Op.(*fsmpb.Command_CommitObject); ok {
		for _, ev := range derive.DeriveObject(index, op.CommitObject, res, m.Stream) {
			h.publish(ev)
		}
		return
	}
	id := derive.StreamOf(cmd)
	if id == 0 || res == nil || res.Rejection != nil || res.Deduplicated {
		return
	}
	after, _ := m.Stream(id)
	if ev, ok := derive.Derive(index, cmd, res, after); ok {
		h.publish(ev)
	}
}

// Restored forgets all history: the state jumped to the snapshot at index.
// Watchers are cut off with ErrReset; they resume elsewhere or from the
// ring rebuilt after index.
func (h *Hub) Restored(index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.floor = index
	for _, f := range h.feeds {
		for _, w := range f.watchers {
			h.cutLocked(w, ErrReset)
		}
	}
	clear(h.feeds)
}

func (h *Hub) publish(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.feeds[ev.Stream]
	if f == nil {
		f = &feed{}
		h.feeds[ev.Stream] = f
	}
	f.push(ev, h.cfg.History)
	if len(f.watchers) > 0 {
		h.fanOutLocked(f, ev)
	}
	if ev.Kind == Deleted {
		// Watchers got the last event; nothing more can happen to the id.
		for _, w := range f.watchers {
			w.registered = false
			h.watchers--
		}
		delete(h.feeds, ev.Stream)
	}
}

// fanOutLocked hands ev to f's watchers, cutting off those whose queue is
// full. One copy is shared by all: queues hold pointers, so an idle
// watcher's queue costs Buffer words, not Buffer events.
func (h *Hub) fanOutLocked(f *feed, ev Event) {
	shared := &ev
	for i := 0; i < len(f.watchers); {
		w := f.watchers[i]
		select {
		case w.ch <- shared:
			i++
		default:
			h.cutLocked(w, ErrSlowConsumer) // removes f.watchers[i]
			h.cutoffs.Add(1)
		}
	}
}

func (f *feed) push(ev Event, history int) {
	if len(f.ring) < history {
		f.ring = append(f.ring, ev)
		return
	}
	f.evicted = f.ring[f.head].Version
	f.ring[f.head] = ev
	f.head = (f.head + 1) % len(f.ring)
}

// since appends the held events newer than version, oldest first.
func (f *feed) since(version uint64, out []Event) []Event {
	for i := range f.ring {
		ev := f.ring[(f.head+i)%len(f.ring)]
		if ev.Version > version {
			out = append(out, ev)
		}
	}
	return out
}

// heldSince is the version after which every event of the stream is held.
func (h *Hub) heldSince(f *feed) uint64 {
	if f == nil {
		return h.floor
	}
	return max(h.floor, f.evicted)
}

// Subscribe registers a watcher of stream and returns the held events
// newer than from. known is the newest version the state shows for the
// stream (its own version, its generations'): a from at or past it has
// missed nothing even where the ring does not reach. ErrCompacted when the
// events after from are not all held; ErrTooManyWatchers at the limit.
//
// Call it under the state machine's read lock: the backlog then ends
// exactly where the live events begin.
func (h *Hub) Subscribe(stream, from, known uint64) (*Watcher, []Event, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.feeds[stream]
	if held := h.heldSince(f); from < held && from < known {
		return nil, nil, fmt.Errorf("%w: stream %d holds events after version %d only, not after %d",
			ErrCompacted, stream, held, from)
	}
	if h.watchers >= h.cfg.MaxWatchers {
		return nil, nil, fmt.Errorf("%w: %d", ErrTooManyWatchers, h.cfg.MaxWatchers)
	}
	if f == nil {
		f = &feed{}
		h.feeds[stream] = f
	}
	var backlog []Event
	backlog = f.since(from, backlog)
	w := &Watcher{hub: h, stream: stream, ch: make(chan *Event, h.cfg.Buffer), done: make(chan struct{}), registered: true}
	f.watchers = append(f.watchers, w)
	h.watchers++
	return w, backlog, nil
}

// cutLocked ends w with err and unregisters it. h.mu is held.
func (h *Hub) cutLocked(w *Watcher, err error) {
	if !w.registered {
		return
	}
	w.err = err
	close(w.done)
	h.unregisterLocked(w)
}

func (h *Hub) unregisterLocked(w *Watcher) {
	if !w.registered {
		return
	}
	w.registered = false
	h.watchers--
	f := h.feeds[w.stream]
	if f == nil {
		return
	}
	for i, x := range f.watchers {
		if x == w {
			last := len(f.watchers) - 1
			f.watchers[i] = f.watchers[last]
			f.watchers[last] = nil
			f.watchers = f.watchers[:last]
			break
		}
	}
}

// Watchers is how many watchers are registered.
func (h *Hub) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchers
}

// Cutoffs is how many watchers were cut off as slow consumers.
func (h *Hub) Cutoffs() uint64 { return h.cutoffs.Load() }

// Watcher receives one stream's events as they are applied.
type Watcher struct {
	hub    *Hub
	stream uint64
	ch     chan *Event
	done   chan struct{}
	// registered and err are guarded by hub.mu; err is set before done
	// is closed and read only after.
	registered bool
	err        error
}

// Events delivers the stream's events in version order. The events are
// shared with the stream's other watchers and must not be changed.
func (w *Watcher) Events() <-chan *Event { return w.ch }

// Done is closed when the hub cut the watcher off; Err says why. Events
// already queued may still be taken.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err is why the watcher was cut off (ErrSlowConsumer, ErrReset), once Done
// is closed.
func (w *Watcher) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

// Close unregisters the watcher. Safe to call more than once.
func (w *Watcher) Close() {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	w.hub.unregisterLocked(w)
}
