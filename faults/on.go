//go:build metad_faults

package faults

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/metad/metad/clock"
)

var (
	bugs   = parse(os.Getenv("METAD_FAULTS"))
	offset atomic.Int64 // nanoseconds added to the wall clock
)

func parse(s string) map[string]bool {
	m := map[string]bool{}
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			m[b] = true
		}
	}
	return m
}

// Bug reports whether the named planted bug is switched on.
func Bug(name string) bool { return bugs[name] }

// Now is the wall clock used to stamp commands, shifted by the offset.
func Now() time.Time { return clock.Real.Now().Add(time.Duration(offset.Load())) }

// Register adds POST /debug/faults/clock-offset?d=DURATION.
func Register(mux *http.ServeMux) {
	mux.HandleFunc("/debug/faults/clock-offset", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST ?d=DURATION", http.StatusMethodNotAllowed)
			return
		}
		d, err := time.ParseDuration(r.URL.Query().Get("d"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		offset.Store(int64(d))
		fmt.Fprintf(w, "clock offset %s\n", d)
	})
}
