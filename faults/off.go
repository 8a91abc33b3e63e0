//go:build !metad_faults

package faults

import (
	"net/http"
	"time"

	"github.com/metad/metad/clock"
)

// Compiled reports whether fault injection is built in.
const Compiled = false

// Bug reports whether a planted bug is switched on: never, in this build.
func Bug(string) bool { return false }

// Now is the wall clock used to stamp commands.
func Now() time.Time { return clock.Real.Now() }

// Register adds the fault-control endpoints: none, in this build.
func Register(*http.ServeMux) {}
