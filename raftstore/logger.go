package raftstore

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter bridges hashicorp's hclog.Logger, which raft, its transport
// and its snapshot store log through, into the *slog.Logger metad passes
// in. Levels map one to one (raft's state changes are INFO, its per-RPC
// chatter DEBUG, and they stay so); Trace becomes slog.LevelDebug-4. The
// level is the slog handler's business, so SetLevel is a no-op.
//
// Values are rendered the way hclog renders them: hclog.Fmt("%+v", x) is
// formatted (slog would print the format string and its arguments as a
// slice), Hex/Octal/Binary get their prefixes, and a value without a key
// is logged under hclog's EXTRA_VALUE_AT_END.
//
// Raft repeats some warnings for as long as a peer is down ("failed to
// heartbeat to", several a second). WARN and ERROR lines are therefore
// limited per message and peer: the first is logged, repeats within
// repeatWindow are counted, and the next line after the window carries
// suppressed=N.
type hclogAdapter struct {
	logger  *slog.Logger // carries the implied args, not the name
	name    string
	args    []any
	repeats *repeatLimiter // shared by every logger derived from one root
}

// LevelTrace is the slog level hclog's Trace maps to.
const LevelTrace = slog.LevelDebug - 4

// repeatWindow is how long a repeated raft warning stays quiet.
const repeatWindow = 10 * time.Second

func newHCLogger(logger *slog.Logger, name string) hclog.Logger {
	return &hclogAdapter{logger: logger, name: name, repeats: newRepeatLimiter(repeatWindow, wall.Now)}
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default: // Info, NoLevel, Off: Off is never passed to Log by hclog users
		return slog.LevelInfo
	}
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	sl := slogLevel(level)
	ctx := context.Background()
	if !a.logger.Enabled(ctx, sl) {
		return
	}
	attrs := make([]any, 0, len(args)+4)
	attrs = append(attrs, "logger", a.name)
	attrs = append(attrs, renderArgs(args)...)
	if sl >= slog.LevelWarn {
		suppressed, ok := a.repeats.allow(a.name + "\x00" + msg + "\x00" + peerOf(args))
		if !ok {
			return
		}
		if suppressed > 0 {
			attrs = append(attrs, "suppressed", suppressed)
		}
	}
	a.logger.Log(ctx, sl, msg, attrs...)
}

// renderArgs turns hclog's key/value pairs into slog's, rendering the
// values hclog gives a meaning to.
func renderArgs(args []any) []any {
	if len(args)%2 == 1 {
		args = append(args[:len(args)-1:len(args)-1], hclog.MissingKey, args[len(args)-1])
	}
	out := make([]any, len(args))
	for i := 0; i < len(args); i += 2 {
		out[i] = args[i]
		out[i+1] = renderValue(args[i+1])
	}
	return out
}

func renderValue(v any) any {
	switch v := v.(type) {
	case hclog.Format:
		if len(v) == 0 {
			return ""
		}
		if f, ok := v[0].(string); ok {
			return fmt.Sprintf(f, v[1:]...)
		}
		return fmt.Sprint(v...)
	case hclog.Hex:
		return "0x" + strconv.FormatUint(uint64(v), 16)
	case hclog.Octal:
		return "0" + strconv.FormatUint(uint64(v), 8)
	case hclog.Binary:
		return "0b" + strconv.FormatUint(uint64(v), 2)
	case hclog.Quote:
		return string(v)
	case hclog.CapturedStacktrace:
		return string(v)
	}
	return v
}

// peerOf returns the value of a "peer" argument, which tells raft's
// repeated per-peer warnings apart.
func peerOf(args []any) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == "peer" {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) enabled(l hclog.Level) bool {
	return a.logger.Enabled(context.Background(), slogLevel(l))
}

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.args }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	return &hclogAdapter{logger: a.logger.With(renderArgs(args)...), name: a.name,
		args: append(a.args[:len(a.args):len(a.args)], args...), repeats: a.repeats}
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

// ResetNamed renames the logger. The name is added to each record (not to
// the handler), so a named child never repeats the "logger" key.
func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return &hclogAdapter{logger: a.logger, name: name, args: a.args, repeats: a.repeats}
}

func (a *hclogAdapter) SetLevel(hclog.Level) {}

func (a *hclogAdapter) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if a.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return &lineWriter{a: a, level: level}
}

// lineWriter logs each write (a line from a *log.Logger) as one record.
type lineWriter struct {
	a     *hclogAdapter
	level hclog.Level
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.a.Log(w.level, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// repeatLimiter lets a message through once per window per key and counts
// what it held back.
type repeatLimiter struct {
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex // guards keys
	keys map[string]*repeatState
}

type repeatState struct {
	last       time.Time // when a line with this key was last logged
	suppressed int       // lines held back since then
}

// maxRepeatKeys bounds the limiter's memory; past it the table starts over
// (at worst a few lines repeat early).
const maxRepeatKeys = 1024

func newRepeatLimiter(window time.Duration, now func() time.Time) *repeatLimiter {
	return &repeatLimiter{window: window, now: now, keys: make(map[string]*repeatState)}
}

// allow reports whether a line with key may be logged now and, if so, how
// many were held back since the last one.
func (r *repeatLimiter) allow(key string) (suppressed int, ok bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	st, seen := r.keys[key]
	if !seen {
		if len(r.keys) >= maxRepeatKeys {
			clear(r.keys)
		}
		r.keys[key] = &repeatState{last: now}
		return 0, true
	}
	if now.Sub(st.last) < r.window {
		st.suppressed++
		return 0, false
	}
	suppressed, st.suppressed, st.last = st.suppressed, 0, now
	return suppressed, true
}
