package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/bench/load"
)

func mk(system string, tput, p50, p99 float64, errs int64) sample {
	s := sample{System: system, Result: load.Result{Throughput: tput, Latency: load.Latency{P50: p50, P99: p99}}}
	if errs > 0 {
		s.Errors = map[string]int64{"X": errs}
	}
	return s
}

func TestSummarizeTakesMediansAndSumsErrors(t *testing.T) {
	got := summarize([]sample{mk("m", 300, 3, 30, 1), mk("m", 100, 1, 10, 0), mk("m", 200, 2, 20, 2)})
	if want := (side{Throughput: 200, P50: 2, P99: 20, Errors: 3}); got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	// An even count takes the lower middle: a figure that was measured.
	if got := median([]float64{4, 1, 3, 2}); got != 2 {
		t.Errorf("median = %v, want 2", got)
	}
	if (summarize(nil) != side{}) || ratio(1, 0) != 0 {
		t.Error("empty input is not zero")
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name        string
		metad, etcd sample
		met         bool
	}{
		{"faster and tighter", mk("metad", 2000, 1, 5, 0), mk("etcd", 1000, 1, 6, 0), true},
		{"equal is enough", mk("metad", 1000, 1, 5, 0), mk("etcd", 1000, 1, 5, 0), true},
		{"slower", mk("metad", 999, 1, 5, 0), mk("etcd", 1000, 1, 5, 0), false},
		{"worse p99", mk("metad", 2000, 1, 7, 0), mk("etcd", 1000, 1, 6, 0), false},
		{"errors", mk("metad", 2000, 1, 5, 3), mk("etcd", 1000, 1, 6, 0), false},
	} {
		met, why := verdict(&row{Metad: []sample{tc.metad}, Base: []sample{tc.etcd}})
		if met != tc.met {
			t.Errorf("%s: met = %v (%s), want %v", tc.name, met, why, tc.met)
		}
	}
}

func TestTablePrintsRatiosAndTargets(t *testing.T) {
	rows := []*row{
		{Pair: "resolve vs linearizable get", Concurrency: 64, Metad: []sample{mk("metad", 500, 2, 10, 0)}, Base: []sample{mk("etcd", 1000, 1, 5, 0)}},
		{Pair: "commit-append vs put", Concurrency: 64, Metad: []sample{mk("metad", 3000, 1, 4, 0)}, Base: []sample{mk("etcd", 1500, 2, 8, 0)}},
	}
	var b bytes.Buffer
	printTable(&b, rows)
	printTargets(&b, rows)
	out := b.String()
	for _, want := range []string{"0.50", "2.00", "NOT MET resolve at 64", "MET     commit-append at 64"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestParseFlagsReportsEveryProblem(t *testing.T) {
	_, err := parseFlags([]string{"--concurrency", "1,x,0", "--pairs", "append-put,nope", "--rounds", "0", "--duration", time.Millisecond.String()})
	for _, want := range []string{`"x"`, `"0"`, `"nope"`, "--rounds", "Duration"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
	o, err := parseFlags(nil)
	if err != nil || len(o.concurrency) != 3 || len(o.pairs) != 3 || len(o.streamsPerObject) != 4 {
		t.Errorf("defaults: %+v %v", o, err)
	}
}

func TestReadTargetIsTheResolveOverheadAgainstTheGetP50(t *testing.T) {
	for _, tc := range []struct {
		name      string
		read, get sample
		met       bool
	}{
		{"overhead below the get", mk("metad", 500, 3, 9, 0), mk("metad", 900, 2, 5, 0), true},
		{"overhead equal to the get", mk("metad", 500, 4, 9, 0), mk("metad", 900, 2, 5, 0), true},
		{"overhead above the get", mk("metad", 500, 4.1, 9, 0), mk("metad", 900, 2, 5, 0), false},
		{"failed reads", mk("metad", 500, 3, 9, 1), mk("metad", 900, 2, 5, 0), false},
	} {
		met, why := readVerdict(&row{Metad: []sample{tc.read}, Base: []sample{tc.get}})
		if met != tc.met {
			t.Errorf("%s: met = %v (%s), want %v", tc.name, met, why, tc.met)
		}
	}
}

func TestReadPairNeedsTheStore(t *testing.T) {
	if _, err := parseFlags([]string{"--pairs", "read-get"}); err == nil || !strings.Contains(err.Error(), "--store-args") {
		t.Errorf("read-get without --store-args: %v", err)
	}
	if _, err := parseFlags([]string{"--pairs", "read-get", "--store-args", "--object-dir /x"}); err != nil {
		t.Errorf("read-get with a store: %v", err)
	}
}

// diff prints B/A per system and says whether metad kept at least the
// share of throughput the other side kept.
func TestDiffPrintsWhatTheChangeCostEachSide(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, m, e float64) string {
		s := summary{Label: name, Rows: []*row{{Pair: "commit-append vs put", Concurrency: 64, BaseSystem: baseEtcd,
			Metad: []sample{mk("metad", m, 1, 10, 0)}, Base: []sample{mk("etcd", e, 1, 10, 0)}}}}
		b, _ := json.Marshal(s)
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain, tls, worse := write("plain", 1000, 1000), write("tls", 900, 800), write("worse", 700, 800)
	for _, tc := range []struct {
		b    string
		want []string
	}{
		{tls, []string{"0.90", "0.80", "yes"}},
		{worse, []string{"0.70", "0.80", "no"}},
	} {
		var out bytes.Buffer
		if err := diff(&out, plain, tc.b); err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("diff lacks %q:\n%s", want, out.String())
			}
		}
	}
}

func mkObject(system string, per int, ops, p50, p99 float64) sample {
	s := mk(system, ops, p50, p99, 0)
	s.Workload, s.EntriesPerOp = map[string]string{"metad": "commit-object", "etcd": "txn"}[system], per
	return s
}

// The object-txn rows compare entries (stream appends, puts) per second,
// a row of more than 128 streams has no etcd side, and the targets take
// the commit-append row of the same concurrency for the p99 bound.
func TestObjectRowsCompareEntriesAndJudgeTheTargets(t *testing.T) {
	appendRow := &row{Pair: "commit-append vs put", Concurrency: 64, BaseSystem: baseEtcd,
		Metad: []sample{{System: "metad", Workload: "commit-append", Result: load.Result{Throughput: 5000, Latency: load.Latency{P99: 10}}}},
		Base:  []sample{mk("etcd", 4000, 1, 12, 0)}}
	rows := []*row{
		appendRow,
		{Pair: objectName(100), Concurrency: 64, BaseSystem: baseEtcd, StreamsPerObject: 100,
			Metad: []sample{mkObject("metad", 100, 1200, 5, 25)}, Base: []sample{mkObject("etcd", 100, 300, 20, 40)}},
		{Pair: objectName(1000), Concurrency: 64, BaseSystem: baseEtcd, StreamsPerObject: 1000,
			Metad: []sample{mkObject("metad", 1000, 150, 50, 90)}},
	}
	var b bytes.Buffer
	printTable(&b, rows)
	printTargets(&b, rows)
	out := b.String()
	for _, want := range []string{
		"120000", "30000", "4.00", // x100: appends/s, etcd puts/s, ratio
		"150000",                                    // x1000: appends/s, no etcd side
		"MET     commit-object x100 >= 100000",      // 120000 at 64
		"NOT MET commit-object x100 p99 <= 2x",      // 25 ms against 10
		"NOT MET commit-object x100 >= 5x etcd txn", // 4x
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
