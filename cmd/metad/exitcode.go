package main

import (
	"context"
	"errors"

	"github.com/metad/metad/client"
	"github.com/metad/metad/cmd/internal/cliflags"
)

// Exit statuses, the same for every command (README "Exit status").
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2 // unknown command or flag, invalid setting or argument
	exitNotFound  = 3 // the stream, generation, pin, object or server does not exist
	exitRetryable = 4 // try again: no leader, unreachable, overloaded, timed out
)

// usageError marks mistakes in how a command was called.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// notFoundError marks a thing the command looked for and did not find.
type notFoundError struct{ error }

func (e notFoundError) Unwrap() error { return e.error }

// exitCode maps an error to the exit status: the one place that does.
// The cluster's answers are classified by the client's sentinels; the
// server refusing an argument is bad usage as much as a flag that does not
// parse.
func exitCode(err error) int {
	var ue usageError
	var nf notFoundError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.Is(err, cliflags.ErrUsage), errors.Is(err, client.ErrInvalidArgument):
		return exitUsage
	case errors.As(err, &nf), errors.Is(err, client.ErrNotFound):
		return exitNotFound
	case errors.Is(err, client.ErrRetryable), errors.Is(err, client.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, errUnhealthy):
		return exitRetryable
	}
	return exitFailure
}
