//go:build !metad_faults

package node

import "net/http"

// node's one fault seam: the harness's fault-control endpoints
// (faults_on.go, built only with -tags metad_faults). In the production
// build the admin address serves none.
func registerFaults(*http.ServeMux) {}
