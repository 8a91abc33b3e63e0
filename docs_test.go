package metad_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches a Markdown link or image target: ](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinkOnlyInsideTheRepository: the project documents its own
// guarantees in its own words, so the top-level documents link nothing
// outside the repository (no web address, no path that climbs out of it)
// and every file they link exists.
func TestDocsLinkOnlyInsideTheRepository(t *testing.T) {
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, "jepsen/README.md")
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.HasPrefix(target, "#") {
				continue
			}
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s links outside the repository: %s", doc, target)
				continue
			}
			path := filepath.Join(filepath.Dir(doc), strings.SplitN(target, "#", 2)[0])
			abs, err := filepath.Abs(path)
			if err != nil || !strings.HasPrefix(abs, root+string(filepath.Separator)) {
				t.Errorf("%s links a path outside the repository: %s", doc, target)
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links a missing file: %s", doc, target)
			}
		}
	}
}

// testName matches a Go test, benchmark or fuzz target named anywhere in a
// document, quoted or not; pattern is set when the name is the argument of
// -run or -bench, a prefix of the names it selects.
var testName = regexp.MustCompile(`(-(?:run|bench)[= ]['"^]*)?\b((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)`)

// TestDocsNameOnlyTestsThatExist: a guarantee held by a test that was
// renamed or removed is held by nothing, so every test any document of the
// repository names must be defined in some _test.go file of it (a -run or
// -bench pattern must select at least one).
func TestDocsNameOnlyTestsThatExist(t *testing.T) {
	defined := definedTests(t)
	for _, doc := range trackedFiles(t, "*.md") {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range undefinedTests(string(b), defined) {
			t.Errorf("%s %s", doc, problem)
		}
	}
}

// definedTests lists every test, benchmark and fuzz target a tracked
// _test.go file defines.
func definedTests(t *testing.T) map[string]bool {
	t.Helper()
	defined := map[string]bool{}
	for _, f := range trackedFiles(t, "*_test.go") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w+)\(`).FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = true
		}
	}
	if len(defined) == 0 {
		t.Fatal("found no tests at all")
	}
	return defined
}

// undefinedTests lists the test names doc names that defined lacks.
func undefinedTests(doc string, defined map[string]bool) []string {
	var problems []string
	for _, m := range testName.FindAllStringSubmatch(doc, -1) {
		name := m[2]
		if defined[name] {
			continue
		}
		if m[1] != "" && selectsSome(name, defined) {
			continue
		}
		problems = append(problems, "names "+name+", which no _test.go file defines")
	}
	return problems
}

// selectsSome: some defined test's name starts with prefix.
func selectsSome(prefix string, defined map[string]bool) bool {
	for d := range defined {
		if strings.HasPrefix(d, prefix) {
			return true
		}
	}
	return false
}

// TestUndefinedTestsFindsABogusName: the check above fails on a name no
// test has, quoted or not, and on a -run pattern that selects nothing.
func TestUndefinedTestsFindsABogusName(t *testing.T) {
	defined := map[string]bool{"TestReal": true, "BenchmarkPlan1M": true}
	doc := "`TestReal` and TestReal hold it; `go test -bench=BenchmarkPlan` runs; TestBogus and `TestNoSuch` do not exist; -run TestGone neither"
	got := undefinedTests(doc, defined)
	want := []string{"names TestBogus, which no _test.go file defines", "names TestNoSuch, which no _test.go file defines",
		"names TestGone, which no _test.go file defines"}
	if !slices.Equal(got, want) {
		t.Errorf("undefinedTests = %q, want %q", got, want)
	}
}

// TestNothingCitesTheDesignDocument: the repository explains its
// guarantees in its own words (GUARANTEES.md, ARCHITECTURE.md, each
// package's doc.go); no file refers a reader to a design document it does
// not hold.
func TestNothingCitesTheDesignDocument(t *testing.T) {
	design := "DESIGN" + ".md"          // spelled apart, so this file does not cite it
	for _, f := range trackedFiles(t) { // every file: go.mod cited it once
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, design) {
				t.Errorf("%s:%d cites %s: %s", f, i+1, design, strings.TrimSpace(line))
			}
		}
	}
}

// guaranteeCited matches a guarantee's name (G1, G16) in a comment or a
// document.
var guaranteeCited = regexp.MustCompile(`\bG([0-9]+)\b`)

// TestCitedGuaranteesExist: every guarantee a comment, a proto or a
// document names is one GUARANTEES.md states.
func TestCitedGuaranteesExist(t *testing.T) {
	b, err := os.ReadFile("GUARANTEES.md")
	if err != nil {
		t.Fatal(err)
	}
	stated := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (G[0-9]+) `).FindAllStringSubmatch(string(b), -1) {
		stated[m[1]] = true
	}
	if len(stated) == 0 {
		t.Fatal("GUARANTEES.md states no guarantee: is this test out of date?")
	}
	for _, f := range trackedFiles(t, "*.go", "*.md", "*.proto") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range guaranteeCited.FindAllString(line, -1) {
				if !stated[m] {
					t.Errorf("%s:%d cites %s, which GUARANTEES.md does not state", f, i+1, m)
				}
			}
		}
	}
}

// trackedFiles lists the repository's files (git ls-files) matching any
// pattern (none: every file), leaving out the harness's run reports.
func trackedFiles(t *testing.T, patterns ...string) []string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"ls-files", "--"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasPrefix(f, "jepsen/runs/") {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal("git ls-files found nothing: is this a clone?")
	}
	return files
}

// TestReadmeContentsAndOrder: the README opens with a table of contents
// that links every section in order, and a newcomer's path (run, cluster,
// use, operate) comes before the developers' section: the test suite and
// the fault harness (`go test`, `go run ./jepsen`) appear in no section
// before "For developers" (they stood in the quick start, before a
// newcomer had a cluster).
func TestReadmeContentsAndOrder(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range readmeContentsProblems(string(b)) {
		t.Error(problem)
	}
}

// contentsEntry matches one line of the contents: - [Title](#anchor).
var contentsEntry = regexp.MustCompile(`^- \[([^\]]+)\]\(#([^)]+)\)$`)

// readmeContentsProblems lists what is wrong with the README's contents
// and section order (none: nothing).
func readmeContentsProblems(readme string) []string {
	var sections, listed []string
	body := map[string]string{} // section title -> its text
	inFence, inContents, current := false, false, ""
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if title, ok := strings.CutPrefix(line, "## "); ok && !inFence {
			inContents, current = title == "Contents", title
			if !inContents {
				sections = append(sections, title)
			}
			continue
		}
		if m := contentsEntry.FindStringSubmatch(line); inContents && m != nil {
			if m[2] != anchor(m[1]) {
				return []string{"contents entry " + line + " links #" + m[2] + ", not #" + anchor(m[1])}
			}
			listed = append(listed, m[1])
		}
		body[current] += line + "\n"
	}
	var problems []string
	if strings.Join(listed, "|") != strings.Join(sections, "|") {
		problems = append(problems, "the contents list "+strings.Join(listed, ", ")+"; the sections are "+strings.Join(sections, ", "))
	}
	dev := slices.Index(sections, "For developers")
	if dev < 0 {
		return append(problems, "no section For developers")
	}
	for _, s := range sections[:dev] {
		if strings.Contains(body[s], "go test ") || strings.Contains(body[s], "go run ./jepsen") {
			problems = append(problems, "section "+s+", before For developers, runs the tests or the harness")
		}
	}
	return problems
}

// anchor is the fragment a heading is linked by: lower case, spaces as
// dashes, punctuation but '-' dropped.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestReadmeRecipesRunSideBySide: the S3 recipe says it runs beside the
// three-node cluster, so no port of its server may be one of that
// cluster's. (It once took the defaults, 7420-7423: the three-node
// recipe's n2.)
func TestReadmeRecipesRunSideBySide(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if problem := recipePortClash(string(b), "A three-node cluster on one machine", "Objects in S3"); problem != "" {
		t.Error(problem)
	}
}

// recipePortClash says which ports the servers of section a's and section
// b's shell blocks share ("" if none, or why it could not tell).
func recipePortClash(readme, a, b string) string {
	pa, pb := sectionServerPorts(readme, a), sectionServerPorts(readme, b)
	if len(pa) == 0 || len(pb) == 0 {
		return fmt.Sprintf("found no metad server ports in %q (%v) or %q (%v)", a, pa, b, pb)
	}
	var shared []int
	for p := range pb {
		if pa[p] {
			shared = append(shared, p)
		}
	}
	if len(shared) > 0 {
		slices.Sort(shared)
		return fmt.Sprintf("the servers of %q and %q share ports %v", a, b, shared)
	}
	return ""
}

var (
	serverAddrFlags = map[string]int{"grpc-addr": 7420, "raft-addr": 7421, "gossip-addr": 7422, "http-addr": 7423} // and their defaults
	loopBase        = regexp.MustCompile(`p=\$\(\((\d+) \+ i\*(\d+)\)\)`)
	loopCount       = regexp.MustCompile(`for i in ([\d ]+); do`)
)

// sectionServerPorts lists the ports of every `metad server` the shell
// blocks of the "## title" section start: each --*-addr flag's port, or the
// flag's default when it is not given. The three-node recipe's loop form
// (p=$((BASE + i*STEP)), ports $p and $((p+N))) is expanded for its i.
func sectionServerPorts(readme, title string) map[int]bool {
	_, rest, ok := strings.Cut(readme, "\n## "+title+"\n")
	if !ok {
		return nil
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	ports := map[int]bool{}
	for i, block := range strings.Split(section, "```") {
		if i%2 == 0 || !strings.HasPrefix(block, "sh\n") {
			continue
		}
		bases := []int{0}
		if m := loopBase.FindStringSubmatch(block); m != nil {
			base, _ := strconv.Atoi(m[1])
			step, _ := strconv.Atoi(m[2])
			bases = nil
			if c := loopCount.FindStringSubmatch(block); c != nil {
				for _, f := range strings.Fields(c[1]) {
					n, _ := strconv.Atoi(f)
					bases = append(bases, base+n*step)
				}
			}
		}
		for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
			if !strings.Contains(line, "metad server") {
				continue
			}
			for flag, def := range serverAddrFlags {
				for _, p := range bases {
					ports[flagPort(line, flag, def, p)] = true
				}
			}
		}
	}
	return ports
}

// flagPort is the port line gives --flag: a literal, $p, $((p+N)) with p
// the loop's base, or def when the flag is absent.
func flagPort(line, flag string, def, p int) int {
	m := regexp.MustCompile(`--` + flag + `[ =]127\.0\.0\.1:(\d+|\$p|\$\(\(p\+(\d+)\)\))`).FindStringSubmatch(line)
	switch {
	case m == nil:
		return def
	case m[1] == "$p":
		return p
	case m[2] != "":
		n, _ := strconv.Atoi(m[2])
		return p + n
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// archName matches a code span of ARCHITECTURE.md naming a package's
// identifier: pkg.Name or dir/pkg.Name (a type, function, method, variable
// or constant), or pkg.Type.Field.
var archName = regexp.MustCompile(`^([a-z][a-z0-9_/]*)\.([A-Z]\w*)(\.\w+)?$`)

// TestArchitectureNamesWhatExists: the developer's guide walks files,
// packages and identifiers; every file or directory it names (a code span
// with a slash or a file suffix) exists, every pattern matches a file, and
// every pkg.Name it names is declared in that package, so the guide cannot
// go on walking code that moved.
func TestArchitectureNamesWhatExists(t *testing.T) {
	b, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range regexp.MustCompile("`([^`\\s]+)`").FindAllStringSubmatch(string(b), -1) {
		name := m[1]
		switch {
		case strings.Contains(name, "*"):
			if got, _ := filepath.Glob(name); len(got) == 0 {
				t.Errorf("ARCHITECTURE.md names %s, which matches no file", name)
			}
		case archName.MatchString(name):
			sm := archName.FindStringSubmatch(name)
			dir, ok := packageDir(sm[1])
			if !ok {
				continue // not a package of the repository (errors.Is)
			}
			if !declares(t, dir, sm[2]) {
				t.Errorf("ARCHITECTURE.md names %s, but package %s declares no %s", name, dir, sm[2])
			}
		case strings.Contains(name, "/") || regexp.MustCompile(`\.(go|md|proto|txt)$`).MatchString(name):
			if strings.Count(name, "/") == 0 {
				continue // a file named by its base alone (doc.go, faults_on.go): one per package
			}
			if _, err := os.Stat(name); err != nil {
				t.Errorf("ARCHITECTURE.md names %s, which does not exist", name)
			}
		default:
			continue
		}
		checked++
	}
	if checked < 40 {
		t.Errorf("checked %d names in ARCHITECTURE.md: is this test out of date?", checked)
	}
}

// packageDir is the directory of the repository's package called pkg: pkg
// itself if it is one (fsm/kv), else the one directory whose last element
// it is (fsmpb: fsm/fsmpb); false if none is, or several are.
func packageDir(pkg string) (string, bool) {
	if st, err := os.Stat(pkg); err == nil && st.IsDir() {
		return pkg, true
	}
	var found []string
	_ = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if path == ".git" || d.Name() == "testdata" || path == filepath.FromSlash("jepsen/runs") {
			return filepath.SkipDir
		}
		if d.Name() == pkg {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// declares reports whether a non-test Go file of the package in dir
// declares name (a function, method, type, variable, constant or field).
func declares(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		return false
	}
	decl := regexp.MustCompile(`(?m)^(func (\([^)]*\) )?|type |var |const |\t)` + name + `\b`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if decl.Match(b) {
			return true
		}
	}
	return false
}
