//go:build metad_faults

package node

import (
	"net/http"

	"github.com/metad/metad/faults"
)

// registerFaults adds the harness's fault-control endpoints
// (faults.Register: POST /debug/faults/clock-offset) to the admin address.
func registerFaults(mux *http.ServeMux) { faults.Register(mux) }
