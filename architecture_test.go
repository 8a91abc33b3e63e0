// Package metad_test holds the architecture test: it keeps the dependency
// directions of STYLE.md true as the code grows.
package metad_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/metad/metad"

// pureCore packages decide; they never do I/O, read clocks, log, or start
// goroutines, so they can be tested exhaustively and deterministically.
var pureCore = []string{"fsm", "fsm/fsmpb", "fsm/kv", "resolver", "checksum", "repair/plan", "watch/derive", "membership/plan"}

// forbiddenInCore may not appear anywhere in a pure package's transitive
// dependencies.
var forbiddenInCore = regexp.MustCompile(`^(net|net/.*|log|log/.*|os/exec|github\.com/hashicorp/.*|google\.golang\.org/grpc.*)$`)

// forbiddenDirect may not be imported by a pure package's own files. `os` can
// only be checked here: the standard library's fmt imports it.
var forbiddenDirect = regexp.MustCompile(`^(os|os/.*|net|net/.*|log|log/.*)$`)

// inward lists, per package, the project packages it must not import
// (directly or not): dependencies point inward, as the chains README.md and
// ARCHITECTURE.md draw (TestDocumentedChainsAreImports holds each of their
// arrows to an import this table allows). resolver, repair and gc do not
// import raftstore: they declare the small interfaces readpath's store
// adapter fills, and node hands them those adapters; peer does not see api
// (node hands it api's error mapping) and readpath proposes through peer
// without importing it. jepsen/ sees metad only over the network (the
// public API's generated code, the client and the object store). A
// trailing "$" bans a package but not its subpackages.
var inward = map[string][]string{
	"fsm":        {"resolver", "repair", "raftstore", "membership", "api", "cmd/metad", "objectstore", "client", "jepsen", "readpath", "peer"},
	"resolver":   {"repair", "gc", "raftstore", "membership", "api", "node", "cmd/metad", "objectstore", "client", "jepsen", "readpath", "peer"},
	"repair":     {"resolver", "raftstore", "membership", "api", "node", "gc", "cmd/metad", "client", "jepsen", "readpath", "peer"},
	"raftstore":  {"resolver", "repair", "membership", "api", "cmd/metad", "objectstore", "client", "jepsen", "readpath", "peer"},
	"membership": {"fsm", "resolver", "repair", "raftstore", "api", "cmd/metad", "client", "jepsen", "readpath", "peer"},
	"gc":         {"resolver", "repair", "raftstore", "membership", "api", "node", "cmd/metad", "client", "jepsen", "readpath", "peer"},
	"api":        {"node", "cmd/metad", "jepsen"},
	"readpath":   {"api", "node", "membership", "cmd/metad", "client", "jepsen", "peer"},
	// The node-to-node work: the Peer service and its client, forwarding,
	// status fan-out, the level raise, the cluster id and tombstones. It
	// sees raftstore, repair and the generated API with its error table,
	// never the public services (api) that use it.
	"peer":        {"api$", "node", "cmd/metad", "jepsen", "readpath", "membership", "client", "resolver", "gc", "objectstore", "watch", "backup"},
	"node":        {"cmd/metad", "jepsen"},
	"backup":      {"resolver", "repair", "gc", "membership", "api", "node", "cmd/metad", "client", "jepsen", "readpath", "peer"},
	"clock":       {"fsm", "resolver", "repair", "raftstore", "membership", "api", "node", "gc", "cmd/metad", "objectstore", "client", "jepsen", "internal", "readpath", "peer"},
	"objectstore": {"fsm", "resolver", "repair", "raftstore", "membership", "api", "node", "gc", "cmd/metad", "client", "jepsen", "readpath", "peer"},
	"watch":       {"resolver", "repair", "raftstore", "membership", "api", "node", "gc", "cmd/metad", "objectstore", "client", "jepsen", "readpath", "peer"},
	"client":      {"fsm", "resolver", "repair", "raftstore", "membership", "cmd/metad", "jepsen", "readpath", "peer"},
	"jepsen":      {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "node", "api$", "faults", "readpath", "peer"},
	"faults":      {"fsm", "resolver", "repair", "raftstore", "membership", "api", "node", "gc", "cmd/metad", "objectstore", "client", "jepsen", "internal", "readpath", "peer"},
	// The data and record checksums are a leaf: fsm, objectstore, client
	// and the tools import it, and it imports nothing of the project's.
	"checksum": {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "api", "node", "cmd/metad", "objectstore", "client", "jepsen", "auth", "tlsconfig", "readpath", "internal", "clock", "watch", "peer"},
	// The error table is a leaf beside the generated API: api builds its
	// statuses from it and client its sentinels, so it may import only
	// api/metadpb.
	"api/reasons": {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "api$", "node", "cmd/metad", "objectstore", "client", "jepsen", "auth", "tlsconfig", "readpath", "internal", "clock", "watch", "checksum", "faults", "peer"},
	// Request tracing is a leaf: node wires it, raftstore and readpath
	// open spans under the caller's.
	"tracing": {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "api", "node", "cmd/metad", "objectstore", "client", "jepsen", "auth", "tlsconfig", "readpath", "internal", "clock", "watch", "checksum", "peer"},
	// The disk guard is a leaf: node builds it and hands raftstore its
	// Refuse (raftstore.SpaceGuard), so it knows no other package.
	"diskspace": {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "api", "node", "cmd/metad", "objectstore", "client", "jepsen", "auth", "tlsconfig", "readpath", "watch", "checksum", "peer", "tracing"},
	// The state store is a leaf under raftstore: it knows the interface the
	// state machine reads through (fsm/kv) and nothing else of the project.
	"statestore": {"fsm$", "fsm/fsmpb", "resolver", "repair", "raftstore", "membership", "gc", "api", "node", "cmd/metad", "objectstore", "client", "jepsen", "auth", "tlsconfig", "readpath", "internal", "clock", "watch", "checksum", "peer", "tracing", "diskspace", "backup"},
	// Security leaves: raftstore, api, node and client use them.
	"tlsconfig": {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "api", "node", "cmd/metad", "objectstore", "client", "jepsen", "auth", "readpath", "peer"},
	"auth":      {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "api", "node", "cmd/metad", "objectstore", "client", "jepsen", "tlsconfig", "readpath", "peer"},
	// The server binary ships no load generator (cmd/metad-bench is its
	// own binary), and the flags the commands share know no server part.
	"cmd/metad": {"bench", "cmd/metad-bench"},
	// The load drivers see metad as a client does: they build records
	// with package client and checksum, never the state machine.
	"bench":           {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "node", "api$", "readpath", "peer", "statestore", "watch"},
	"cmd/metad-bench": {"fsm", "resolver", "repair", "raftstore", "membership", "gc", "node", "api$", "readpath", "peer", "statestore", "watch", "cmd/metad"},
	"cmd/internal":    {"bench", "cmd/metad", "node", "api$", "readpath", "raftstore", "membership", "fsm", "peer"},
}

// foreignOwners names, per foreign library (an import path and everything
// under it), the one project package that may import it: everyone else sees
// the owner's interfaces, types and sentinels. api, membership, node and
// cmd/metad reach hashicorp/raft only through raftstore.
var foreignOwners = map[string]string{
	"github.com/hashicorp/raft":        "raftstore",
	"github.com/hashicorp/raft-boltdb": "raftstore",
	"github.com/hashicorp/raft-wal":    "raftstore",
	"github.com/cockroachdb/pebble":    "statestore",
	"github.com/hashicorp/memberlist":  "membership",
	"github.com/aws/aws-sdk-go-v2":     "objectstore",
	"github.com/aws/smithy-go":         "objectstore",
	"go.opentelemetry.io/otel":         "tracing",
	"go.opentelemetry.io/contrib":      "tracing",
}

// testHelpers are packages only tests and the Jepsen harness import: like
// test files, they may reach a foreign library directly (weedtest acts on
// S3 behind metad's back, and starts the harness's weed mini).
var testHelpers = map[string]bool{"internal/weedtest": true}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func exists(pkg string) bool {
	_, err := os.Stat(filepath.FromSlash(pkg))
	return err == nil
}

func TestPureCoreImportsNoIO(t *testing.T) {
	for _, pkg := range pureCore {
		path := module + "/" + pkg
		for _, dep := range goList(t, "-deps", path) {
			if forbiddenInCore.MatchString(dep) {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
		for _, imp := range goList(t, "-f", `{{join .Imports " "}}`, path) {
			if forbiddenDirect.MatchString(imp) {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}

// clockOrConcurrency finds reads of the wall clock, sleeps and goroutines.
// A pure package may be handed a clock.Clock (the resolver is: it waits
// between attempts), but never takes the wall clock itself: naming
// clock.Real is a read of it.
var clockOrConcurrency = regexp.MustCompile(`\btime\.(Now|Since|Until|Sleep|After|AfterFunc|Tick|NewTimer|NewTicker)\b|\bclock\.Real\b|(^|[{;])\s*go\s+(func\b|[\w.]+\()`)

func TestPureCoreReadsNoClock(t *testing.T) {
	for _, pkg := range pureCore {
		files, _ := filepath.Glob(filepath.Join(filepath.FromSlash(pkg), "*.go"))
		if len(files) == 0 {
			t.Errorf("pureCore names %s, which holds no Go file: renamed? update the list", pkg)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if clockOrConcurrency.MatchString(line) {
					t.Errorf("%s:%d: %s", f, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
}

// wallClock finds direct reads of the wall clock and timers, calls or not
// (a loop handed time.Now reads the wall clock as surely as one calling it).
var wallClock = regexp.MustCompile(`\btime\.(Now|Since|Until|Sleep|After|AfterFunc|Tick|NewTimer|NewTicker)\b`)

// TestLoopsReadTimeThroughClock: every production file of every package
// of the module but package clock (whatever its build tags: faults_on.go
// and invariants_on.go too) reads the time and waits only through package
// clock — an injected clock.Clock, or clock.Real where what it waits on
// keeps real time (raft, the network, the object store, the servers the
// harness and the load drivers measure). So every loop runs on a clock a
// test can drive, and none is left out by a list: a new or renamed package
// is checked as it is. The forbidigo lint rule says the same.
func TestLoopsReadTimeThroughClock(t *testing.T) {
	checked := 0
	for _, line := range goList(t, "-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}},{{join .IgnoredGoFiles ","}}`, "./...") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		if parts[0] == module+"/clock" {
			continue
		}
		checked++
		for _, name := range strings.Split(parts[2], ",") {
			if name != "" {
				checkWallClock(t, filepath.Join(parts[1], name))
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked %d packages: is this test out of date?", checked)
	}
}

// checkWallClock fails t at every line of the Go file f that reads the
// wall clock directly.
func checkWallClock(t *testing.T, f string) {
	t.Helper()
	if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
		return
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if wallClock.MatchString(line) {
			t.Errorf("%s:%d: %s (read time through package clock)", f, i+1, strings.TrimSpace(line))
		}
	}
}

// bans reports whether the inward table forbids pkg to depend on dep (both
// relative to the module).
func bans(pkg, dep string) bool {
	for _, b := range inward[pkg] {
		if exact, ok := strings.CutSuffix(b, "$"); ok {
			if dep == exact {
				return true
			}
			continue
		}
		if dep == b || strings.HasPrefix(dep, b+"/") {
			return true
		}
	}
	return false
}

// TestDocumentedChainsAreImports: every arrow README.md and ARCHITECTURE.md
// draw in their "Dependencies point inward" paragraph (a code span such as
// `api → peer → {repair, raftstore}`) is a direct import of the package it
// points from, and one the inward table allows; so the documents cannot
// drift from the code or from the table.
func TestDocumentedChainsAreImports(t *testing.T) {
	imports := map[string]map[string]bool{}
	for _, line := range goList(t, "-f", `{{.ImportPath}}={{join .Imports ","}}`, "./...") {
		pkg, imps, _ := strings.Cut(line, "=")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		imports[rel] = map[string]bool{}
		for _, imp := range strings.Split(imps, ",") {
			imports[rel][strings.TrimPrefix(imp, module+"/")] = true
		}
	}
	for _, doc := range []string{"README.md", "ARCHITECTURE.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		chains := documentedChains(string(b))
		if len(chains) < 3 {
			t.Errorf("%s: %d chains found in its \"Dependencies point inward\" paragraph: is this test out of date?", doc, len(chains))
		}
		for _, chain := range chains {
			for i := 0; i+1 < len(chain); i++ {
				for _, from := range chain[i] {
					for _, to := range chain[i+1] {
						if !imports[from][to] {
							t.Errorf("%s draws %s → %s, but %s does not import %s", doc, from, to, from, to)
						}
						if bans(from, to) {
							t.Errorf("%s draws %s → %s, which the inward table forbids", doc, from, to)
						}
					}
				}
			}
		}
	}
}

// documentedChains parses the code spans of doc's paragraph that begins
// "Dependencies point inward": each span with arrows is a chain of steps,
// a step a package or a {set, of, packages}.
func documentedChains(doc string) [][][]string {
	_, para, ok := strings.Cut(doc, "Dependencies point inward")
	if !ok {
		return nil
	}
	para, _, _ = strings.Cut(para, "\n\n")
	var chains [][][]string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(para, -1) {
		if !strings.Contains(m[1], "→") {
			continue
		}
		var chain [][]string
		for _, step := range strings.Split(m[1], "→") {
			step = strings.Trim(strings.TrimSpace(step), "{}")
			var pkgs []string
			for _, p := range strings.Split(step, ",") {
				pkgs = append(pkgs, strings.TrimSpace(p))
			}
			chain = append(chain, pkgs)
		}
		chains = append(chains, chain)
	}
	return chains
}

func TestDependenciesPointInward(t *testing.T) {
	for pkg, banned := range inward {
		// A renamed or moved package fails here instead of dropping out
		// of the check, and so does a ban naming one.
		if !exists(pkg) {
			t.Errorf("inward names %s, which is not in the repository: renamed? update the table", pkg)
			continue
		}
		for _, b := range banned {
			if !exists(strings.TrimSuffix(b, "$")) {
				t.Errorf("inward[%s] bans %s, which is not in the repository: renamed? update the table", pkg, b)
			}
		}
		deps := goList(t, "-deps", module+"/"+pkg+"/...")
		for _, dep := range deps {
			if rel, ok := strings.CutPrefix(dep, module+"/"); ok && bans(pkg, rel) {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// TestForeignLibrariesHaveOneOwner checks the production imports (test files
// may reach a library directly, e.g. membership's in-process clusters run
// real in-memory rafts) of every project package. Each owner must import its
// library, so that the check cannot pass by seeing nothing.
func TestForeignLibrariesHaveOneOwner(t *testing.T) {
	owned := map[string]bool{}
	for _, line := range goList(t, "-f", `{{.ImportPath}}={{join .Imports ","}}`, "./...") {
		pkg, imports, _ := strings.Cut(line, "=")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		for _, imp := range strings.Split(imports, ",") {
			for lib, owner := range foreignOwners {
				if imp != lib && !strings.HasPrefix(imp, lib+"/") {
					continue
				}
				if rel != owner && !testHelpers[rel] {
					t.Errorf("%s imports %s, which only %s may import", rel, imp, owner)
				}
				owned[lib] = true
			}
		}
	}
	for lib, owner := range foreignOwners {
		if !owned[lib] {
			t.Errorf("%s does not import %s: is the owners table out of date?", owner, lib)
		}
	}
}

// TestServerBinaryHasNoBenchmarkDriver: the benchmark driver and its
// runner (bench/load) live in cmd/metad-bench, not in the server binary
// (issue 14). metad-bench must reach the runner, so the check cannot pass
// by the package having moved or been renamed.
func TestServerBinaryHasNoBenchmarkDriver(t *testing.T) {
	runner := module + "/bench/load"
	has := func(pkg string) bool {
		for _, dep := range goList(t, "-deps", "./"+pkg) {
			if dep == runner {
				return true
			}
		}
		return false
	}
	if has("cmd/metad") {
		t.Errorf("cmd/metad depends on %s: the benchmark driver belongs in cmd/metad-bench", runner)
	}
	if !has("cmd/metad-bench") {
		t.Errorf("cmd/metad-bench does not depend on %s: is this test out of date?", runner)
	}
}

// TestFaultsEnterThroughOneSeam: package faults (the harness's planted
// bugs and clock offset) is imported only by a package's faults_on.go,
// built only with -tags metad_faults, beside a faults_off.go built only
// without it, which does not import it: no other production file names a
// fault, so the production build neither links a planted bug nor branches
// on one. The seams must be found, so the check cannot pass by seeing
// nothing.
func TestFaultsEnterThroughOneSeam(t *testing.T) {
	imp := `"` + module + `/faults"`
	seams := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == ".git" || path == "faults" || path == filepath.FromSlash("jepsen/runs")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src, imports := string(b), strings.Contains(string(b), imp)
		switch filepath.Base(path) {
		case "faults_on.go":
			seams++
			if !strings.HasPrefix(src, "//go:build metad_faults\n") {
				t.Errorf("%s is not built only with -tags metad_faults", path)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), "faults_off.go")); err != nil {
				t.Errorf("%s has no faults_off.go beside it: the production build has no seam", path)
			}
		case "faults_off.go":
			if !strings.HasPrefix(src, "//go:build !metad_faults\n") {
				t.Errorf("%s is not built only without -tags metad_faults", path)
			}
			if imports {
				t.Errorf("%s imports package faults: the production build would link it", path)
			}
		default:
			if imports {
				t.Errorf("%s imports package faults outside its package's seam (faults_on.go)", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seams < 3 {
		t.Errorf("found %d faults_on.go seams (api, readpath, raftstore, node have one): is this test out of date?", seams)
	}
}

// testSleep finds a test's sleeps: time.Sleep and time.Tick, and a bare
// receive from a timer (<-time.After(d), <-clock.After(c, d)) standing in
// for one.
var testSleep = regexp.MustCompile(`\btime\.(Sleep|Tick)\(|^\s*<-\s*(time|clock)\.After\(`)

// maxTestSleeps bounds the sleeps left in tests. Each waits on something
// outside the process (the progress of a real server, the pace of the load
// offered to one) and says so in a comment; every other wait is on a
// condition (internal/waitfor) or on a clock the test drives
// (internal/fakeclock).
const maxTestSleeps = 10

// TestTestsSleepRarelyAndSayWhy: at most maxTestSleeps sleeps in the
// tests of every module of the repository, each with a comment, on its
// line or the one above, saying what it waits on.
func TestTestsSleepRarelyAndSayWhy(t *testing.T) {
	n := 0
	for _, f := range trackedFiles(t, "*_test.go") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			loc := testSleep.FindStringIndex(line)
			if loc == nil {
				continue
			}
			n++
			if !strings.Contains(line[loc[0]:], "//") && (i == 0 || !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "//")) {
				t.Errorf("%s:%d sleeps without a comment saying what it waits on: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	if n > maxTestSleeps {
		t.Errorf("%d sleeps in tests, at most %d: wait on a condition (internal/waitfor) or drive a fake clock (internal/fakeclock)", n, maxTestSleeps)
	}
}

// statusBuilt finds where a gRPC status or its ErrorInfo is made by hand.
var statusBuilt = regexp.MustCompile(`\bstatus\.(New|Newf|Error|Errorf)\(|\berrdetails\.ErrorInfo\{|\breasons\.Spec\{`)

// statusBuilders are the only production files that may make a status:
// api's build (errors.go), which takes every reason's code, definiteness
// and retry delay from the error table (api/reasons), the stream-set
// refusal that re-wraps build's status with more details (streamset.go),
// and the client's stand-in for a watch stream that ended without one
// (it carries no reason: the client's transport row applies).
var statusBuilders = map[string]bool{"api/errors.go": true, "api/streamset.go": true, "client/watch.go": true}

// TestStatusesComeFromTheErrorTable: no server error is built outside the
// one table (quarantine's and watch's once were), so every reason a
// client can see has the code, definiteness and sentinel the table gives
// it, which the every-reason wire test checks.
func TestStatusesComeFromTheErrorTable(t *testing.T) {
	for _, f := range trackedFiles(t, "*.go") {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, ".pb.go") || strings.HasPrefix(f, "api/reasons/") || statusBuilders[f] {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if statusBuilt.MatchString(line) {
				t.Errorf("%s:%d builds a status outside api's build (errors.go): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	for f := range statusBuilders {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("statusBuilders names %s: %v (renamed? update the list)", f, err)
		}
	}
}
