package raftstore

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter bridges hashicorp's hclog.Logger, which raft, its transport
// and its snapshot store log through, into the *slog.Logger metad passes
// in. Levels map one to one (raft's state changes are INFO, its per-RPC
// chatter DEBUG, and they stay so); Trace becomes slog.LevelDebug-4. The
// level is the slog handler's business, so SetLevel is a no-op.
type hclogAdapter struct {
	logger *slog.Logger
	name   string
	args   []any
}

// LevelTrace is the slog level hclog's Trace maps to.
const LevelTrace = slog.LevelDebug - 4

func newHCLogger(logger *slog.Logger, name string) hclog.Logger {
	return &hclogAdapter{logger: logger.With("logger", name), name: name}
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
	a.logger.Log(context.Background(), slogLevel(level), msg, args...)
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
	return &hclogAdapter{logger: a.logger.With(args...), name: a.name, args: append(a.args[:len(a.args):len(a.args)], args...)}
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return &hclogAdapter{logger: a.logger.With("logger", name), name: name, args: a.args}
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
