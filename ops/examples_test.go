package ops

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/metad/metad/internal/proc"
)

// serverFlags returns the flag names `metad server --help` lists.
func serverFlags(t *testing.T) map[string]bool {
	t.Helper()
	out := mustCLI(t, "server", "--help")
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(out, -1) {
		flags[m[1]] = true
	}
	if !flags["data-dir"] || !flags["shutdown-timeout"] {
		t.Fatalf("server --help lists %v", flags)
	}
	return flags
}

func examplePath(parts ...string) string {
	return filepath.Join(append([]string{"..", "examples"}, parts...)...)
}

// TestKubernetesExample: the StatefulSet's probes point at the admin
// endpoints, its flags exist, and its timings let a pod drain.
func TestKubernetesExample(t *testing.T) {
	b, err := os.ReadFile(examplePath("kubernetes", "metad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var sts map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if doc["kind"] == "StatefulSet" {
			sts = doc
		}
	}
	if sts == nil {
		t.Fatal("no StatefulSet")
	}
	spec := sts["spec"].(map[string]any)
	if spec["podManagementPolicy"] != "Parallel" {
		t.Error("pods must start in parallel: readiness needs a quorum")
	}
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	ctr := pod["containers"].([]any)[0].(map[string]any)
	probe := func(name string) string {
		return ctr[name].(map[string]any)["httpGet"].(map[string]any)["path"].(string)
	}
	if probe("readinessProbe") != "/readyz" || probe("livenessProbe") != "/healthz" || probe("startupProbe") != "/healthz" {
		t.Errorf("probes: readiness %s, liveness %s, startup %s", probe("readinessProbe"), probe("livenessProbe"), probe("startupProbe"))
	}
	flags := serverFlags(t)
	var shutdown string
	for _, a := range ctr["args"].([]any)[1:] {
		name, value, _ := strings.Cut(strings.TrimPrefix(a.(string), "--"), "=")
		if !flags[name] {
			t.Errorf("arg %q: metad server has no --%s", a, name)
		}
		if name == "http-addr" && !strings.HasSuffix(value, ":7423") {
			t.Errorf("http-addr %s: probes use port 7423", value)
		}
		if name == "shutdown-timeout" {
			shutdown = value
		}
	}
	grace := pod["terminationGracePeriodSeconds"].(int)
	secs, _ := strconv.Atoi(strings.TrimSuffix(shutdown, "s"))
	if secs == 0 || grace <= secs {
		t.Errorf("terminationGracePeriodSeconds %d must exceed --shutdown-timeout %s", grace, shutdown)
	}
}

// TestSystemdExample: a Type=notify unit running a server whose config
// file names only real settings.
func TestSystemdExample(t *testing.T) {
	unit, err := os.ReadFile(examplePath("systemd", "metad.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "ExecStart=/usr/local/bin/metad server --config /etc/metad/metad.yaml", "KillSignal=SIGTERM"} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("unit lacks %q", want)
		}
	}
	b, err := os.ReadFile(examplePath("systemd", "metad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	if err := yaml.Unmarshal(b, &settings); err != nil {
		t.Fatal(err)
	}
	flags := serverFlags(t)
	for k := range settings {
		if !flags[k] {
			t.Errorf("metad.yaml: %q is not a server setting", k)
		}
	}
	if analyze, err := exec.LookPath("systemd-analyze"); err == nil {
		out, _ := exec.Command(analyze, "verify", examplePath("systemd", "metad.service")).CombinedOutput()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			// The binary is not installed here; anything else is a defect.
			if line != "" && !strings.Contains(line, "/usr/local/bin/metad") {
				t.Errorf("systemd-analyze verify: %s", line)
			}
		}
	}
}

// TestLocalClusterScript runs examples/local-cluster.sh: start, a rolling
// restart, stop.
func TestLocalClusterScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and restarts three servers")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the script needs curl")
	}
	base := freeBase(t)
	dir := t.TempDir()
	script := func(arg string) *exec.Cmd {
		cmd := exec.Command("bash", examplePath("local-cluster.sh"), arg)
		cmd.Env = append(os.Environ(), "BASE_PORT="+strconv.Itoa(base), "DIR="+dir, "METAD="+proc.Binary(t))
		return cmd
	}
	run := func(arg string) string {
		out, err := script(arg).CombinedOutput()
		if err != nil {
			t.Fatalf("local-cluster.sh %s: %v\n%s", arg, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { _ = script("stop").Run() })
	if out := run("start"); !strings.Contains(out, "3 voters") || !strings.Contains(out, "Leader") {
		t.Fatalf("start:\n%s", out)
	}
	if out := run("restart"); !strings.Contains(out, "3 voters") {
		t.Fatalf("restart:\n%s", out)
	}
	if out := run("stop"); strings.Count(out, "stopped") != 3 {
		t.Fatalf("stop:\n%s", out)
	}
}

// freeBase finds a base port whose twelve ports (BASE+10*i+k) are free now.
func freeBase(t *testing.T) int {
	t.Helper()
	for range 50 {
		_, p, _ := net.SplitHostPort(proc.FreePort(t))
		port, _ := strconv.Atoi(p)
		base := port - 10
		if base < 1024 || base+34 > 65535 {
			continue
		}
		free := true
		for i := 1; i <= 3 && free; i++ {
			for k := range 4 {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+10*i+k))
				if err != nil {
					free = false
					break
				}
				l.Close()
			}
		}
		if free {
			return base
		}
	}
	t.Fatal("no free block of ports")
	return 0
}

// TestDockerfileExample: the image's data dir belongs to the nonroot user
// the server runs as (a volume Docker creates for a missing directory is
// root's, and the server could write nothing), the docker run example
// publishes gossip's UDP port as well as its TCP one, and its steps write
// the TLS files the image reads, the key owned by that user.
func TestDockerfileExample(t *testing.T) {
	b, err := os.ReadFile(examplePath("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	if !strings.Contains(df, "FROM gcr.io/distroless/static-debian12:nonroot") {
		t.Fatal("the image is no longer distroless nonroot: revisit this test")
	}
	chown := strings.Index(df, "COPY --from=build --chown=65532:65532 /out/var/lib/metad /var/lib/metad")
	volume := strings.Index(df, "VOLUME /var/lib/metad")
	if chown < 0 || volume < 0 || chown > volume {
		t.Errorf("/var/lib/metad must be created owned by 65532 before VOLUME declares it (chown at %d, VOLUME at %d)", chown, volume)
	}
	if !strings.Contains(df, "-p 7422:7422/udp") {
		t.Error("the docker run example does not publish gossip's UDP port 7422")
	}
	// The key the server is started with must be the nonroot user's:
	// metad tls writes it 0600 for whoever ran it (the container could not
	// read it, and refused to start).
	key := regexp.MustCompile(`"--tls-key-file", "/etc/metad/tls/([^"]+)"`).FindStringSubmatch(df)
	if key == nil {
		t.Fatal("the image's command names no --tls-key-file under /etc/metad/tls: revisit this test")
	}
	if want := "install -o 65532 -g 65532 -m 0600 pki/" + key[1] + " tls/" + key[1]; !strings.Contains(df, want) {
		t.Errorf("the docker run example never gives %s to the nonroot user 65532 (want %q)", key[1], want)
	}
	// Every file the command names is one the example's steps put in tls/.
	for _, m := range regexp.MustCompile(`"/etc/metad/tls/([^"]+)"`).FindAllStringSubmatch(df, -1) {
		if !strings.Contains(df, " tls/"+m[1]) {
			t.Errorf("the image reads /etc/metad/tls/%s, which the example's steps never write to tls/", m[1])
		}
	}
}

// TestSystemdExampleGivesTheKeysToTheUser: metad tls writes private keys
// 0600 for whoever ran it; the unit runs as metad, so the install steps
// must hand the key named in metad.yaml to that user.
func TestSystemdExampleGivesTheKeysToTheUser(t *testing.T) {
	unit, err := os.ReadFile(examplePath("systemd", "metad.service"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(examplePath("systemd", "metad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	if err := yaml.Unmarshal(conf, &settings); err != nil {
		t.Fatal(err)
	}
	key, _ := settings["tls-key-file"].(string)
	if key == "" || !bytes.Contains(unit, []byte("User=metad")) {
		t.Fatal("metad.yaml names no tls-key-file or the unit no longer runs as metad: revisit this test")
	}
	want := "install -o metad -g metad -m 0600 " + filepath.Base(key) + " " + filepath.Dir(key) + "/"
	if !bytes.Contains(unit, []byte(want)) {
		t.Errorf("the unit's install steps never give %s to the metad user (want %q)", key, want)
	}
}
