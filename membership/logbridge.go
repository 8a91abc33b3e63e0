package membership

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// newStdLogger adapts logger to the *log.Logger memberlist wants.
// memberlist writes one line per Printf, starting with a level tag such as
// "[DEBUG] memberlist: ..."; the tag becomes the slog level and is dropped
// from the message.
func newStdLogger(logger *slog.Logger) *log.Logger {
	return log.New(&slogWriter{logger: logger}, "", 0)
}

type slogWriter struct {
	logger *slog.Logger
}

// levelTags maps memberlist's level prefixes to slog levels. "[ERR]" is what
// memberlist writes; "[ERROR]" and "[TRACE]" appear in hclog-style lines of
// its dependencies.
var levelTags = []struct {
	tag   string
	level slog.Level
}{
	{"[TRACE]", slog.LevelDebug},
	{"[DEBUG]", slog.LevelDebug},
	{"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn},
	{"[ERR]", slog.LevelError},
	{"[ERROR]", slog.LevelError},
}

func (w *slogWriter) Write(p []byte) (int, error) {
	level, msg := parseLogLine(p)
	w.logger.Log(context.Background(), level, msg, slog.String("component", "memberlist"))
	return len(p), nil
}

// parseLogLine splits a memberlist log line into its level and message.
// A line without a known tag is logged at INFO, whole.
func parseLogLine(p []byte) (slog.Level, string) {
	line := bytes.TrimSpace(p)
	for _, t := range levelTags {
		if rest, ok := bytes.CutPrefix(line, []byte(t.tag)); ok {
			return t.level, string(bytes.TrimSpace(rest))
		}
	}
	return slog.LevelInfo, string(line)
}
