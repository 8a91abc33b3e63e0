package node

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/metad/metad/faults"
)

// startHTTP serves the admin endpoints: / (a status page, statuspage.go),
// /metrics (Prometheus), /healthz
// (the process is alive), /readyz (a member of the configuration, a leader
// known, applied close to the leader's commit index: the same verdict as
// gRPC health; when not ready it says why), and /debug/pprof only when
// enabled.
func (n *Server) startHTTP(reg *prometheus.Registry) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Exactly /: any other unknown path stays 404.
	mux.HandleFunc("GET /{$}", n.serveStatusPage)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !n.api.Serving() {
			http.Error(w, "not ready: "+n.api.NotReadyReason(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	faults.Register(mux) // nothing unless built with -tags metad_faults
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
	n.goLoop(func() {
		if err := n.http.Serve(lis); err != nil && err != http.ErrServerClosed {
			n.serveErr <- fmt.Errorf("http: %w", err)
		}
	})
	return nil
}
