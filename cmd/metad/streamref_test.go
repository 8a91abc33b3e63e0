package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// streamCommands are invocations of every command with a STREAM argument,
// with STREAM as the placeholder, in an order that leaves the stream
// usable until the last three.
var streamCommands = [][]string{
	{"stream", "describe", "STREAM"},
	{"append", "STREAM", "--data", "by name"},
	{"object", "commit", "STREAM=FILE"},
	{"resolve", "STREAM", "COMMITTED", "0"},
	{"read", "STREAM", "COMMITTED", "0"},
	{"evidence", "list", "STREAM"},
	{"index", "list", "STREAM", "--view", "COMMITTED", "--generation", "0"},
	{"index", "publish", "STREAM", "--view", "TOPIC_COMPACTED", "--generation", "1", "--coverage", "0-1", "--record", "0-1@OBJECT/0+5"},
	{"index", "retire", "STREAM", "TOPIC_COMPACTED", "1"},
	{"object", "report", "STREAM", "TOPIC_COMPACTED", "1/0@1", "--kind", "IO_ERROR"},
	{"quarantine", "lift", "STREAM", "TOPIC_COMPACTED", "1", "0", "1"},
	{"stream", "watch", "STREAM", "--for", "1s"},
	{"stream", "trim", "STREAM", "1"},
	{"stream", "seal", "STREAM"},
	{"stream", "delete", "STREAM"},
}

// TestEveryStreamArgumentTakesANameOrAnID: every command whose usage has a
// STREAM argument is in streamCommands, and each finds the stream by its
// name as by its id: a name no stream has is STREAM_NOT_FOUND (exit 3)
// for every one of them, not a malformed id (exit 2); the real stream's
// name does what its id does.
func TestEveryStreamArgumentTakesANameOrAnID(t *testing.T) {
	covered := map[string]bool{}
	for _, args := range streamCommands {
		covered["metad "+strings.Join(args[:commandWords(args)], " ")] = true
	}
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if strings.Contains(cmd.Use, "STREAM") && !covered[cmd.CommandPath()] {
			t.Errorf("%s takes a STREAM but is not in streamCommands", cmd.CommandPath())
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())

	s := startRealServer(t)
	file := writeTemp(t.TempDir(), "part", "bytes")
	fill := func(args []string, stream string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			a = strings.ReplaceAll(a, "STREAM", stream)
			out[i] = strings.ReplaceAll(a, "FILE", file)
		}
		return append(out, "--timeout", "20s")
	}
	for _, args := range streamCommands {
		out, code := s.run(t, fill(args, "no-such-stream")...)
		if code != exitNotFound || !strings.Contains(out, "STREAM_NOT_FOUND") {
			t.Errorf("%s: exit %d, want %d (STREAM_NOT_FOUND):\n%s", strings.Join(fill(args, "no-such-stream"), " "), code, exitNotFound, out)
		}
	}
	for _, args := range streamCommands {
		args := fill(args, "s")
		if made := map[string]bool{"index publish": true, "index retire": true, "object report": true, "quarantine lift": true}; made[args[0]+" "+args[1]] {
			continue // their records are made up: the name must only be found (above)
		}
		if out, code := s.run(t, args...); code != exitOK {
			t.Errorf("%s: exit %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// commandWords is how many leading words of args name the command.
func commandWords(args []string) int {
	switch args[0] {
	case "stream", "object", "evidence", "index", "quarantine":
		return 2
	}
	return 1
}
