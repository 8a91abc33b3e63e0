// Command promqlnames prints the series every PromQL expression of the
// example alert rules and Grafana dashboard selects, parsed with
// Prometheus's own PromQL parser, so a test can check each against what a
// live server exports (ops.TestMonitoringExamplesNameExportedSeries).
//
//	go run ./promqlnames metad-rules.yml metad-dashboard.json
//
// Output, one selector a line: FILE<TAB>WHERE<TAB>METRIC<TAB>LABELS, LABELS
// being the comma-separated label names the selector matches on (besides
// __name__). A file whose expressions do not parse is an error (exit 1).
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: promqlnames FILE.yml|FILE.json ...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		sels, err := fileSelectors(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "promqlnames:", err)
			os.Exit(1)
		}
		for _, s := range sels {
			fmt.Printf("%s\t%s\t%s\t%s\n", path, s.Where, s.Metric, strings.Join(s.Labels, ","))
		}
	}
}
