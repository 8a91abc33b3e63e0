package ops

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"

	"github.com/metad/metad/internal/waitfor"
)

// selector is one series an example rule or panel selects: the metric and
// the label names it matches on (examples/monitoring/promqlnames).
type selector struct {
	file, where, metric string
	labels              []string
}

// monitoringSelectors parses every PromQL expression of the example rules
// and dashboard with Prometheus's parser (promqlnames, its own module so
// that metad's go.mod never sees Prometheus) and returns their selectors.
func monitoringSelectors(t *testing.T) []selector {
	t.Helper()
	cmd := exec.Command("go", "run", "./promqlnames", "metad-rules.yml", "metad-dashboard.json")
	cmd.Dir = examplePath("monitoring")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./promqlnames in %s: %v", cmd.Dir, err)
	}
	var sels []selector
	files := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 4 {
			t.Fatalf("promqlnames printed %q", line)
		}
		s := selector{file: f[0], where: f[1], metric: f[2]}
		if f[3] != "" {
			s.labels = strings.Split(f[3], ",")
		}
		sels = append(sels, s)
		files[s.file] = true
	}
	if !files["metad-rules.yml"] || !files["metad-dashboard.json"] {
		t.Fatalf("promqlnames found selectors in %v only", files)
	}
	return sels
}

// promMade are series and labels Prometheus itself attaches to what it
// scrapes, not exported by the servers: `up` per target, and the target
// labels job and instance on every series.
var (
	promMadeSeries = map[string]bool{"up": true}
	targetLabels   = map[string]bool{"job": true, "instance": true}
)

var labelName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)

// exported is every sample name the servers' /metrics carry, each with the
// label names seen on it.
func exported(t *testing.T, c *proc.Cluster) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	for i, nd := range c.Nodes {
		if !c.Running(i) {
			continue
		}
		for series := range scrape(t, nd.HTTP) {
			name, lbls, _ := strings.Cut(series, "{")
			if out[name] == nil {
				out[name] = map[string]bool{}
			}
			for _, m := range labelName.FindAllStringSubmatch(lbls, -1) {
				out[name][m[1]] = true
			}
		}
	}
	return out
}

// missing lists the selectors that name a series, or match on a label,
// the servers do not export.
func missing(sels []selector, have map[string]map[string]bool) []string {
	var bad []string
	seen := map[string]bool{}
	for _, s := range sels {
		var why string
		switch lbls, ok := have[s.metric]; {
		case promMadeSeries[s.metric]:
		case !ok:
			why = fmt.Sprintf("%s: %s: %s is not exported", s.file, s.where, s.metric)
		default:
			for _, l := range s.labels {
				if !lbls[l] && !targetLabels[l] {
					why = fmt.Sprintf("%s: %s: %s has no label %s", s.file, s.where, s.metric, l)
				}
			}
		}
		if why != "" && !seen[why] {
			seen[why] = true
			bad = append(bad, why)
		}
	}
	sort.Strings(bad)
	return bad
}

var createdStream = regexp.MustCompile(`^stream (\d+) `)

// createStream creates a stream with `metad stream create` and returns its id.
func createStream(t *testing.T, addr, name string) string {
	t.Helper()
	out := mustCLI(t, addr, "stream", "create", name)
	m := createdStream.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("metad stream create %s printed %q", name, out)
	}
	return m[1]
}

// TestMonitoringExamplesNameExportedSeries: every series the example alert
// rules and Grafana dashboard select (examples/monitoring) is one a real
// server exports, with the labels they match on. A one-node cluster is
// driven until each series exists (most vectors appear with their first
// event): writes, resolves, a stream-set object refused by a bound, a
// confirmed failure report of a deleted object (a quarantine, which repair
// re-verifies), a deleted stream whose object GC collects, and a second
// server the leader adds (a membership decision, last-contact samples).
func TestMonitoringExamplesNameExportedSeries(t *testing.T) {
	sels := monitoringSelectors(t)
	c := proc.New(t, 1, "--max-object-streams", "1", "--gc-interval", "200ms", "--gc-min-idle", "1s",
		"--repair-scan-interval", "1s")
	c.StartAll()
	formed(t, c, 1)
	c.Start(c.AddNode())
	addr := "--addr=" + c.Nodes[0].GRPC
	objects := filepath.Join(c.Dir, "objects")

	scraped := createStream(t, addr, "scraped")
	mustCLI(t, addr, "append", scraped, "--data", "hello", "--count", "5")
	var res struct {
		Target struct {
			Version uint64 `json:"version"`
		} `json:"target"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, addr, "-o", "json", "resolve", scraped, "COMMITTED", "3")), &res); err != nil || res.Target.Version == 0 {
		t.Fatalf("resolve: %v %+v", err, res)
	}
	mustCLI(t, addr, "stream", "describe", scraped)

	// The store loses the object: a reader's report is confirmed.
	lost, err := filepath.Glob(filepath.Join(objects, "*", "sha256-*"))
	if err != nil || len(lost) != 1 {
		t.Fatalf("objects in %s: %v %v", objects, lost, err)
	}
	if err := os.Remove(lost[0]); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, addr, "object", "report", scraped, "COMMITTED", "0/0@"+fmt.Sprint(res.Target.Version), "--kind", "OBJECT_MISSING")

	// Two streams in one object, over --max-object-streams 1: refused.
	createStream(t, addr, "other")
	file := filepath.Join(t.TempDir(), "part")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := cli(t, "", addr, "object", "commit", "scraped="+file, "other="+file); code == 0 {
		t.Fatalf("object commit over --max-object-streams 1 succeeded:\n%s", out)
	}

	// A deleted stream's object is garbage once idle for --gc-min-idle.
	collected := createStream(t, addr, "collected")
	mustCLI(t, addr, "append", collected, "--data", "bye")
	mustCLI(t, addr, "stream", "delete", collected)

	// Poll: GC and repair act on their own schedules.
	waitfor.Cond(t, 60*time.Second, "the monitoring examples to select only what the servers export", func() error {
		if bad := missing(sels, exported(t, c)); len(bad) > 0 {
			return fmt.Errorf("missing:\n%s", strings.Join(bad, "\n"))
		}
		return nil
	})
}
