package kv

import (
	"errors"
	"fmt"
)

// Reader reads keys in byte order. Slices it returns are valid only until
// the next call on the same Reader or Iter; callers copy what they keep.
type Reader interface {
	// Get returns the value of key and whether it is present.
	Get(key []byte) ([]byte, bool)
	// Iter iterates over keys in [lower, upper); a nil upper has no bound.
	Iter(lower, upper []byte) Iter
}

// Iter is a position in a Reader's keys. A new Iter is unpositioned: call
// First, Last, SeekGE or SeekLT before Key or Value. Writes made while an
// Iter is open may or may not show through it: callers close their Iters
// before they write (fsm never writes during a walk, as with a B-tree).
type Iter interface {
	First() bool
	Last() bool
	// SeekGE moves to the first key >= key.
	SeekGE(key []byte) bool
	// SeekLT moves to the last key < key.
	SeekLT(key []byte) bool
	Next() bool
	Prev() bool
	Key() []byte
	Value() []byte
	Close()
}

// Store is the state machine's store: reads see its own uncommitted writes.
// A Store is used by one goroutine at a time (the applier); Views may be
// read from any goroutine.
type Store interface {
	Reader
	Set(key, value []byte)
	Delete(key []byte)
	// DeleteRange deletes every key in [lower, upper).
	DeleteRange(lower, upper []byte)
	// Commit makes the writes since the last Commit one atomic batch,
	// visible to Views taken after it; not necessarily durable yet.
	Commit()
	// Sync makes every committed batch durable.
	Sync() error
	// View returns a consistent read-only point of the committed state.
	View() View
}

// View is a consistent read-only point of a Store; Close releases it.
type View interface {
	Reader
	Close()
}

// Error is what a Store panics with when it cannot read or write: Op says
// what it was doing, Err why (naming the file when the store knows it).
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("state store: %s: %v", e.Op, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Fail panics with an *Error; for Store implementations.
func Fail(op string, err error) {
	panic(&Error{Op: op, Err: err})
}

// ErrorOf returns the *Error a recovered panic value holds, or nil when the
// value is something else (which the caller re-panics: a bug, not a disk).
func ErrorOf(recovered any) *Error {
	err, ok := recovered.(error)
	if !ok {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Catch turns a store's panic into *err and lets any other panic go on;
// call it deferred (defer kv.Catch(&err)) where a Store's failure should
// stop unwinding.
func Catch(err *error) {
	if r := recover(); r != nil {
		e := ErrorOf(r)
		if e == nil {
			panic(r)
		}
		*err = e
	}
}
