package node

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/metad/metad/api"
)

// startHTTP serves the admin endpoints: / (a status page, statuspage.go),
// /metrics (Prometheus), /healthz (the process is alive), /readyz (a
// member of the configuration, a leader known, applied close to the
// leader's commit index: the same verdict as gRPC health; when not ready
// it says why), and /debug/pprof only when enabled.
//
// Start calls it before it opens the raft state, whose snapshot restore
// takes minutes at a large state: meanwhile /healthz says ok, /readyz 503
// with api.OpeningVerdict's reason, / 503 with the same, and /metrics and
// pprof serve as usual (a restore is worth profiling). Once n.opened is
// set, / and /readyz are the API's.
func (n *Server) startHTTP(reg *prometheus.Registry) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Exactly /: any other unknown path stays 404.
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if !n.opened.Load() {
			_, reason := api.OpeningVerdict()
			http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
			return
		}
		n.serveStatusPage(w, r)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready, reason := n.readiness(); !ready {
			http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
			return
		}
		// A node below its disk reserve still serves reads and resolves:
		// ready, saying why it refuses growth.
		if full := n.disk.Describe(); full != "" {
			fmt.Fprintln(w, "ready; "+full)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	registerFaults(mux) // the fault seam (faults_off.go): nothing
	if n.cfg.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	lis := n.httpLis // bound by preflight
	n.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if tc := n.sec.httpTLS(); tc != nil {
		// Served over TLS with the node's certificate (security.go).
		lis = tls.NewListener(lis, tc)
	}
	n.log.Info("http admin serving; /readyz says 503 until the raft state is open", "http", lis.Addr().String())
	n.goLoop(func() {
		if err := n.http.Serve(lis); err != nil && err != http.ErrServerClosed {
			n.serveErr <- fmt.Errorf("http: %w", err)
		}
	})
	return nil
}

// readiness is /readyz's verdict: the API's once the raft state is open,
// before that api.OpeningVerdict's. n.api is set before n.opened, so a
// handler that sees opened sees the API.
func (n *Server) readiness() (bool, string) {
	if !n.opened.Load() {
		return api.OpeningVerdict()
	}
	if !n.api.Serving() {
		reason := n.api.NotReadyReason()
		if refused := n.peerRefusals.describe(); refused != "" {
			reason += "; " + refused
		}
		return false, reason
	}
	return true, ""
}
