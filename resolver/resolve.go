package resolver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
)

// The resolve loop (pin, recheck, fall back: ARCHITECTURE.md, "The walk
// of a resolve", step 4) reaches the rest of the system only through
// these interfaces. The server implements them over Raft and
// the object store; tests implement them over an fsm.Machine, so the loop
// runs deterministically.

// Reader runs fn against state that reflects every write acknowledged
// before Read was called: a linearizable read.
type Reader interface {
	Read(ctx context.Context, fn func(State)) error
}

// Pin is a committed lease on one object identity.
type Pin struct {
	ID     uint64
	Expiry time.Time // machine time at which the pin lapses
	// Shared: the lease also serves other resolves of the same object; the
	// Pinner ignores Release of it, and its holder must not release it.
	Shared bool
}

// Pinner takes and releases pins. Pin returns an error wrapping
// ErrPinRefused when the object can no longer be pinned under that
// identity (DELETING, DELETED, replaced); any other error is transient.
type Pinner interface {
	Pin(ctx context.Context, obj fsm.ObjectRef, ttl time.Duration) (Pin, error)
	Release(ctx context.Context, p Pin) error
	// Held returns, without waiting, a shared pin on obj taken earlier
	// that outlives a reader who starts now and reads for ttl, if any.
	Held(obj fsm.ObjectRef, ttl time.Duration) (Pin, bool)
}

// Repairer rebuilds COMMITTED generation-0 records from append evidence.
type Repairer interface {
	// Repair asks for the record covering offset to be rebuilt and waits
	// until the attempt has taken effect or failed.
	Repair(ctx context.Context, stream, offset uint64) error
	// Hint asks for the same without waiting.
	Hint(stream, offset uint64)
}

// Verifier checks with the object store that a record's bytes are still
// the ones its object's identity names and, when the record carries a data
// checksum, that its byte range matches it. A definite mismatch or
// absence wraps ErrPhysicalMismatch (ErrPhysicalCorrupt for bytes that are
// there but wrong); any other error means the store could not be asked.
type Verifier interface {
	Verify(ctx context.Context, rec fsm.RecordInfo) error
}

// Reporter records a candidate failure in replicated state, so that other
// readers stop choosing a record whose bytes are gone.
type Reporter interface {
	ReportFailure(ctx context.Context, id CandidateID, kind fsm.FailureKind, detail string) error
}

// Cache remembers candidates that recently resolved offsets of a stream's
// COMMITTED view: positive entries only, each stamped (in its CandidateID)
// with the record's metadata version and (in its Record) the identity. A
// hit lets the loop skip its first plan and go straight to pin and recheck;
// the recheck is linearizable and must find the same candidate first, so a
// stale entry costs one wasted pin, never a wrong answer (G1, G7). Entries
// are invalidated on any recheck change, pin refusal or physical failure.
type Cache interface {
	// Get returns a cached candidate whose record covers offset.
	Get(stream, offset uint64) (Candidate, bool)
	Put(c Candidate)
	Invalidate(id CandidateID)
}

var (
	// ErrPinRefused marks a pin refusal that excludes the candidate.
	ErrPinRefused = errors.New("pin refused")
	// ErrPhysicalMismatch marks bytes that are not the identity's.
	ErrPhysicalMismatch = errors.New("object bytes do not match identity")
	// ErrPhysicalCorrupt is the ErrPhysicalMismatch of bytes that are
	// there but wrong: they fail the identity's digest or the record's
	// data checksum. It is reported as CORRUPT, not IDENTITY_MISMATCH.
	ErrPhysicalCorrupt = fmt.Errorf("%w: bytes corrupt", ErrPhysicalMismatch)
	// ErrUnavailable is what every retryable resolve failure Is.
	ErrUnavailable = errors.New("resolve unavailable")
)

// UnavailableError is the retryable failure of a resolve: no target could
// be returned within the deadline. It is never an EOF or a trim.
type UnavailableError struct {
	// Deadline is the caller's original deadline (zero if it had none).
	Deadline time.Time
	Attempts int
	// Tried lists every candidate refused and why, in the order refused.
	Tried []Refusal
	// Cause is what ended the attempt (deadline, attempt bound, no candidate).
	Cause error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("resolve unavailable after %d attempts (%v); %d candidates refused", e.Attempts, e.Cause, len(e.Tried))
}

// Is makes every UnavailableError match ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap exposes the cause (e.g. context.DeadlineExceeded).
func (e *UnavailableError) Unwrap() error { return e.Cause }

var (
	errNoCandidate = errors.New("every candidate was refused")
	errAttempts    = errors.New("attempt bound reached")
	// errRepairRefused: the call's one repair failed.
	errRepairRefused = errors.New("repair failed")
	// errRepairBound: a repair took effect, yet the offset needs one again.
	errRepairBound = errors.New("repair bound reached: one repair per call")
)

// Target is what a successful resolve returns: one physical place to read,
// pinned under the identity it names.
type Target struct {
	Key         fsm.IndexKey // stream, view, generation, record start
	Version     uint64       // the record's metadata version
	Checksum    uint32
	RecordRange fsm.Range // offsets the record's bytes cover
	Resolved    fsm.Range // exact readable range: starts at the (next surviving) offset
	Object      fsm.ObjectRef
	Bytes       fsm.ByteRange
	// Data is the data checksum of Bytes the reader checks what it reads
	// against; absent for a record from before data checksums.
	Data checksum.Data
	Pin  Pin
}

// Result is a resolve's answer when it is not a retryable failure.
type Result struct {
	// Outcome is TargetFound, NotFound, EOF, Trimmed or ViewEnd.
	Outcome      Outcome
	Target       Target
	Trim         uint64
	CommittedEnd uint64
	ViewEnd      uint64
	// ReadIndex is the applied index of the state the answer was decided
	// on: for a target, the recheck's — the resolve's linearization point.
	ReadIndex uint64
	Attempts  int
	// Tried lists candidates refused on the way to the answer.
	Tried []Refusal
}

// Config bounds the loop.
type Config struct {
	// PinTTL is the lease taken on a target. Default 30s; range
	// [1s, fsm.MaxPinTTL]. A reader must finish with the target before it.
	PinTTL time.Duration
	// MaxAttempts bounds how many times one call plans. Default 8; range [1, 64].
	MaxAttempts int
	// RetryBackoff is the first wait after a transient failure; it doubles
	// up to MaxRetryBackoff. Defaults 10ms and 200ms; range (0, 10s].
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// ReleaseTimeout bounds releasing a pin that will not be returned.
	// Default 1s; range (0, 10s].
	ReleaseTimeout time.Duration
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		PinTTL: 30 * time.Second, MaxAttempts: 8,
		RetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 200 * time.Millisecond,
		ReleaseTimeout: time.Second,
	}
}

// Validate reports every out-of-range setting.
func (c Config) Validate() error {
	var errs []error
	if c.PinTTL < time.Second || c.PinTTL > fsm.MaxPinTTL {
		errs = append(errs, fmt.Errorf("--pin-ttl %s outside [1s, %s]", c.PinTTL, fsm.MaxPinTTL))
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 64 {
		errs = append(errs, fmt.Errorf("resolver: MaxAttempts %d outside [1, 64]", c.MaxAttempts))
	}
	for name, d := range map[string]time.Duration{
		"RetryBackoff": c.RetryBackoff, "MaxRetryBackoff": c.MaxRetryBackoff, "ReleaseTimeout": c.ReleaseTimeout,
	} {
		if d <= 0 || d > 10*time.Second {
			errs = append(errs, fmt.Errorf("resolver: %s %s outside (0, 10s]", name, d))
		}
	}
	if c.MaxRetryBackoff < c.RetryBackoff {
		errs = append(errs, fmt.Errorf("resolver: MaxRetryBackoff %s below RetryBackoff %s", c.MaxRetryBackoff, c.RetryBackoff))
	}
	return errors.Join(errs...)
}

// Deps are the loop's collaborators. Verifier, Reporter and Cache may be nil.
type Deps struct {
	Reader   Reader
	Pinner   Pinner
	Repairer Repairer
	Verifier Verifier
	Reporter Reporter
	Clock    clock.Clock // the loop's only source of time
	// Cache is optional.
	Cache Cache
	// UnsafeSkipRecheck returns targets without the recheck of step 5. It
	// exists only so that the fault-injection harness can prove it notices;
	// never set it otherwise.
	UnsafeSkipRecheck bool
}

// Resolver runs the resolve loop. It is safe for concurrent use: it holds
// no state between calls.
type Resolver struct {
	cfg  Config
	deps Deps
}

// New returns a Resolver, or the configuration's problems.
func New(cfg Config, deps Deps) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Reader == nil || deps.Pinner == nil || deps.Repairer == nil || deps.Clock == nil {
		return nil, errors.New("resolver: Reader, Pinner, Repairer and Clock are required")
	}
	return &Resolver{cfg: cfg, deps: deps}, nil
}
