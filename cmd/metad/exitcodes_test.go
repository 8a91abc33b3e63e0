package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// realServer is one running metad server with a stream named "s" holding
// one append of "hello" at offset 0.
type realServer struct {
	c       *proc.Cluster
	bin     string
	addr    string
	objects string
	stream  uint64
}

func startRealServer(t *testing.T) *realServer {
	t.Helper()
	c := proc.New(t, 1)
	c.StartAll()
	c.WaitFor("a leader", 60*time.Second, func() bool { return c.Leader(0) == 0 })
	s := &realServer{c: c, bin: proc.Binary(t), addr: c.Nodes[0].GRPC, objects: filepath.Join(c.Dir, "objects")}
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := client.Call(ctx, cl, cl.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: "s", RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatal(err)
	}
	s.stream = resp.StreamId
	if out, code := s.run(t, "append", fmt.Sprint(s.stream), "--data", "hello", "--object-dir", s.objects); code != 0 {
		t.Fatalf("append: exit %d: %s", code, out)
	}
	return s
}

// run runs the real binary against the server and returns its combined
// output and exit status.
func (s *realServer) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), "METAD_ADDR="+s.addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	t.Fatalf("%v: %v", args, err)
	return "", -1
}

// exitCase is one way to call a command and the status it must exit with.
type exitCase struct {
	args []string
	want int
}

// writeTemp writes a file into dir and returns its path.
func writeTemp(dir, name, content string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		panic(err)
	}
	return p
}

// exitCases lists, for every command, its failure modes. down is a
// loopback address nobody listens on.
func exitCases(s *realServer, down, tmp string) []exitCase {
	id := fmt.Sprint(s.stream)
	unreachable := []string{"--addr", down, "--timeout", "1s"}
	nodir := filepath.Join(tmp, "nodir")
	part := filepath.Join(tmp, "part.bin") // TestExitCodes writes it
	return []exitCase{
		{[]string{"bogus"}, 2},
		{[]string{"--bogus-flag"}, 2},
		{[]string{"version", "extra"}, 2},
		{[]string{"version"}, 0},
		{[]string{"version", "-o", "json"}, 0},
		{[]string{"version", "-o", "yaml"}, 2},
		{[]string{"--version"}, 0},

		{[]string{"server", "--log-level", "verbose", "--data-dir", filepath.Join(tmp, "d1")}, 2},
		{[]string{"server", "--bootstrap-expect", "-1", "--data-dir", filepath.Join(tmp, "d2")}, 2},
		{[]string{"server", "--grpc-addr", "garbage", "--data-dir", filepath.Join(tmp, "d3")}, 2},
		// Config files: missing, an unknown key, a value of the wrong type,
		// broken YAML — all bad usage, as a bad flag is.
		{[]string{"server", "--config", filepath.Join(tmp, "missing.yaml"), "--data-dir", filepath.Join(tmp, "d4")}, 2},
		{[]string{"server", "--config", writeTemp(tmp, "unknown.yaml", "bogus-key: 1\n"), "--data-dir", filepath.Join(tmp, "d5")}, 2},
		{[]string{"server", "--config", writeTemp(tmp, "type.yaml", "pin-ttl: [1, 2]\n"), "--data-dir", filepath.Join(tmp, "d6")}, 2},
		{[]string{"server", "--config", writeTemp(tmp, "broken.yaml", "grpc-addr: \"x\n"), "--data-dir", filepath.Join(tmp, "d7")}, 2},
		{[]string{"server", "--validate", "--data-dir", filepath.Join(tmp, "d8"), "--tls-cert-file", filepath.Join(tmp, "none.pem"),
			"--tls-key-file", filepath.Join(tmp, "none-key.pem"), "--tls-ca-file", filepath.Join(tmp, "none-ca.pem")}, 2},

		{[]string{"status", "-o", "yaml"}, 2},
		{append([]string{"status"}, unreachable...), 4},
		{[]string{"status", "--addr", "garbage"}, 2},
		{[]string{"status"}, 0},
		{[]string{"status", "--tls-cert-file", filepath.Join(tmp, "none.pem")}, 2},
		{append([]string{"endpoint", "health"}, unreachable...), 4},
		{[]string{"endpoint", "health", "extra"}, 2},
		{[]string{"endpoint", "bogus"}, 2},
		{[]string{"endpoint", "health"}, 0},
		{append([]string{"members"}, unreachable...), 4},
		{[]string{"members", "extra"}, 2},

		{[]string{"stream", "bogus"}, 2},
		{[]string{"stream", "create", "42"}, 2},
		{[]string{"stream", "create"}, 2},
		{append([]string{"stream", "create", "x"}, unreachable...), 4},
		{[]string{"stream", "describe", "999"}, 3},
		{[]string{"stream", "describe", "nosuchname"}, 3},
		{[]string{"stream", "list", "--limit", "x"}, 2},
		{append([]string{"stream", "list"}, unreachable...), 4},
		{[]string{"stream", "trim", "999", "0"}, 3},
		{[]string{"stream", "trim", id, "x"}, 2},
		{[]string{"stream", "trim", id, "1000000"}, 1},
		{[]string{"stream", "seal", "999"}, 3},
		{[]string{"stream", "seal", "x"}, 3}, // a name no stream has
		{[]string{"stream", "delete", "999"}, 3},
		{[]string{"stream", "delete", "x"}, 3}, // a name no stream has
		{[]string{"stream", "watch", "x"}, 3},  // a name no stream has
		{[]string{"stream", "watch", id, "--for", "-1s"}, 2},
		{[]string{"stream", "watch", "999", "--for", "10s"}, 3},
		{append([]string{"stream", "watch", id, "--for", "2s"}, unreachable...), 4},
		{[]string{"stream", "watch", id, "--for", "1s"}, 0},

		{[]string{"append", id, "--data", "x", "--object-dir", nodir}, 2},
		{[]string{"append", id, "--data", "x", "--file", "f", "--object-dir", s.objects}, 2},
		{[]string{"append", id, "--data", "x", "--count", "18446744073709551615", "--object-dir", s.objects}, 2},
		{[]string{"append", "999", "--data", "x", "--object-dir", s.objects}, 3},
		{[]string{"append", id, "--object-dir", s.objects}, 2},

		{[]string{"index", "bogus"}, 2},
		{[]string{"index", "publish", "999", "--coverage", "0-1"}, 3},
		{[]string{"index", "publish", id, "--coverage", "x"}, 2},
		{[]string{"index", "list", id, "--view", "BOGUS"}, 2},
		{append([]string{"index", "list", id}, unreachable...), 4},
		{[]string{"index", "retire", id, "COMMITTED", "99"}, 3},
		{[]string{"index", "retire", id, "BOGUS", "1"}, 2},

		{[]string{"resolve", "999", "COMMITTED", "0"}, 3},
		{[]string{"resolve", id, "BOGUS", "0"}, 2},
		{[]string{"resolve", id, "COMMITTED", "0", "--exclude", "x"}, 2},
		{append([]string{"resolve", id, "COMMITTED", "0"}, unreachable...), 4},
		{[]string{"resolve", id, "COMMITTED", "0"}, 0},

		{[]string{"read", "999", "COMMITTED", "0", "--object-dir", s.objects}, 3},
		{[]string{"read", id, "COMMITTED", "0", "--object-dir", nodir}, 2},
		{[]string{"read", id, "COMMITTED", "x", "--object-dir", s.objects}, 2},
		{[]string{"read", id, "COMMITTED", "0", "--object-dir", s.objects}, 0},

		{[]string{"object", "bogus"}, 2},
		{[]string{"object", "describe", "no/such/key"}, 3},
		{append([]string{"object", "describe", "k"}, unreachable...), 4},
		{[]string{"object", "register", "k"}, 2},
		{[]string{"object", "pin", "no/such/key"}, 3},
		{[]string{"object", "pin", "k", "--ttl", "0s"}, 2},
		{[]string{"object", "commit"}, 2},
		{[]string{"object", "commit", "no-equals-sign", "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", id + "=", "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", "=" + part, "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", id + "=" + filepath.Join(tmp, "missing.bin"), "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", id + "=" + part, id + "=" + part, "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", id + "=" + part, "s=" + part, "--object-dir", s.objects}, 2}, // an id and a name of one stream
		{[]string{"object", "commit", id + "=" + part, "--count", "0", "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", id + "=" + part, "--count", "2", "--count-lines", "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", id + "=" + part, "--count-of", "other=3", "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", id + "=" + part, "--epoch-of", id + "=x", "--object-dir", s.objects}, 2},
		{[]string{"object", "commit", id + "=" + part, "--object-dir", nodir}, 2},
		{[]string{"object", "commit", "999=" + part, "--object-dir", s.objects}, 3},
		{[]string{"object", "commit", "nosuchname=" + part, "--object-dir", s.objects}, 3},
		{append([]string{"object", "commit", id + "=" + part, "--object-dir", s.objects}, unreachable...), 4},
		{[]string{"object", "commit", id + "=" + part, "--object-dir", s.objects}, 0},                          // opens: epoch 2
		{[]string{"object", "commit", id + "=" + part, "--epoch-of", id + "=1", "--object-dir", s.objects}, 1}, // fenced: STALE_EPOCH
		{[]string{"object", "release", "999999"}, 3},
		{[]string{"object", "release", "x"}, 2},
		{[]string{"object", "report", id, "COMMITTED", "0/0@1", "--kind", "BOGUS"}, 2},
		{[]string{"object", "report", id, "COMMITTED", "nonsense", "--kind", "IO_ERROR"}, 2},

		{[]string{"evidence", "bogus"}, 2},
		{[]string{"evidence", "list", "x"}, 3}, // a name no stream has
		{[]string{"evidence", "list", "999"}, 3},
		{append([]string{"evidence", "list", id}, unreachable...), 4},

		{[]string{"quarantine", "bogus"}, 2},
		{[]string{"quarantine", "list", "extra"}, 2},
		{append([]string{"quarantine", "list"}, unreachable...), 4},
		{[]string{"quarantine", "lift", id, "SIDEWAYS", "0", "0", "1"}, 2},
		{[]string{"quarantine", "lift", id, "COMMITTED", "0", "0"}, 2},
		{[]string{"quarantine", "lift", "999", "COMMITTED", "0", "0", "1"}, 3},
		{[]string{"quarantine", "lift", id, "COMMITTED", "0", "0", "1"}, 1}, // valid, not quarantined

		{[]string{"raft", "bogus"}, 2},
		{append([]string{"raft", "list-peers"}, unreachable...), 4},
		{[]string{"raft", "remove-peer"}, 2},
		{append([]string{"raft", "remove-peer", "n9"}, unreachable...), 4},
		{[]string{"raft", "transfer-leader", "extra"}, 2},
		{append([]string{"raft", "transfer-leader"}, unreachable...), 4},
		{[]string{"raft", "transfer-leader", "--to", "n1"}, 1}, // ALREADY_LEADER
		{[]string{"raft", "remove-peer", "n1"}, 1},             // LAST_VOTER
		{[]string{"raft", "remove-peer", "n9"}, 3},
		{[]string{"raft", "untombstone"}, 2},
		{append([]string{"raft", "untombstone", "n9"}, unreachable...), 4},
		{[]string{"raft", "untombstone", "n9"}, 3}, // no tombstone

		{[]string{"snapshot", "bogus"}, 2},
		{[]string{"snapshot", "save"}, 2},
		{append([]string{"snapshot", "save", filepath.Join(tmp, "x.snap")}, unreachable...), 4},
		{[]string{"snapshot", "inspect", filepath.Join(tmp, "missing.snap")}, 3},
		{[]string{"snapshot", "diff", "a"}, 2},
		{[]string{"snapshot", "restore"}, 2},
		{[]string{"snapshot", "restore", filepath.Join(tmp, "missing.snap"), "--data-dir", filepath.Join(tmp, "r")}, 3},
		{[]string{"snapshot", "restore", "s3://bucket-only", "--data-dir", filepath.Join(tmp, "r")}, 2},
		{[]string{"snapshot", "list"}, 2},
		{[]string{"snapshot", "list", "--from", "ftp://host/x"}, 2},
		{[]string{"snapshot", "list", "--from", filepath.Join(tmp, "no-backups-yet")}, 0},

		{[]string{"data", "bogus"}, 2},
		{[]string{"data", "inspect", "-o", "yaml"}, 2},
		{[]string{"data", "log", "-o", "yaml"}, 2},
		{[]string{"data", "snapshot"}, 2},
		{[]string{"data", "recover", "--peers-file", "f", "--server", "n1=127.0.0.1:1"}, 2},

		{[]string{"tls", "bogus"}, 2},
		{[]string{"tls", "ca", "bogus"}, 2},
		{[]string{"tls", "cert", "bogus"}, 2},
		{[]string{"tls", "gossip-key", "bogus"}, 2},
		{[]string{"tls", "gossip-key", "create"}, 0},
		{[]string{"tls", "gossip-key", "create", "extra"}, 2},
		{[]string{"tls", "ca", "create", "--out-dir", nodir}, 2}, // a directory that does not exist (exit 1 before)
		{[]string{"tls", "ca", "create", "--out-dir", tmp}, 0},
		{[]string{"tls", "ca", "create", "--out-dir", tmp}, 2}, // never overwrites
		// A TLS client of a server without TLS: no retry can help (exit 1).
		{[]string{"status", "--tls-ca-file", filepath.Join(tmp, caCertName), "--timeout", "5s"}, 1},
		{[]string{"tls", "cert", "create", "--out-dir", tmp, "--role", "client", "--name", "c"}, 0},
		{[]string{"tls", "cert", "create", "--out-dir", tmp, "--role", "bogus", "--name", "c2"}, 2},
		{[]string{"tls", "cert", "create", "--out-dir", nodir, "--role", "server", "--name", "n"}, 2}, // no CA there
	}
}

// TestExitCodes runs every command's failure modes with the real binary
// against a real server and checks the exit status (0 success, 1 failure,
// 2 bad usage, 3 not found, 4 retryable).
func TestExitCodes(t *testing.T) {
	s := startRealServer(t)
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "part.bin"), []byte("part\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := exitCases(s, proc.FreePort(t), tmp)
	for _, tc := range cases {
		out, code := s.run(t, tc.args...)
		if code != tc.want {
			t.Errorf("metad %s: exit %d, want %d\n%s", strings.Join(tc.args, " "), code, tc.want, out)
		}
	}
	// A failed server start leaves nothing behind in its data dir.
	for _, d := range []string{"d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"} {
		if _, err := os.Stat(filepath.Join(tmp, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused server start created its data dir %s (%v)", d, err)
		}
	}
}

// Every command of the tree has at least one row in exitCases, so a new
// command cannot be added without saying how it fails.
func TestEveryCommandHasExitCases(t *testing.T) {
	s := &realServer{addr: "127.0.0.1:1", objects: "o"}
	covered := map[string]bool{}
	for _, tc := range exitCases(s, "127.0.0.1:1", t.TempDir()) {
		covered[commandPath(newRootCmd(), tc.args)] = true
	}
	var missing []string
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Name() == "help" || cmd.Name() == "completion" {
			return
		}
		if !covered[cmd.CommandPath()] {
			missing = append(missing, cmd.CommandPath())
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("commands without exit-code cases: %s", strings.Join(missing, ", "))
	}
}

func commandPath(root *cobra.Command, args []string) string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return ""
	}
	return cmd.CommandPath()
}

// TestNewCommandsWork runs the commands added for operators (read, stream
// delete, index retire, object ..., evidence list) through their happy
// paths against a real server, in both output formats.
func TestNewCommandsWork(t *testing.T) {
	s := startRealServer(t)
	id := fmt.Sprint(s.stream)
	mustRun := func(args ...string) string {
		t.Helper()
		out, code := s.run(t, args...)
		if code != 0 {
			t.Fatalf("metad %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	if out := mustRun("read", id, "COMMITTED", "0", "--object-dir", s.objects); out != "hello" {
		t.Errorf("read printed %q, want hello", out)
	}
	var read struct {
		Outcome string `json:"outcome"`
		Data    []byte `json:"data"`
	}
	if err := json.Unmarshal([]byte(mustRun("read", id, "COMMITTED", "0", "--object-dir", s.objects, "-o", "json")), &read); err != nil ||
		read.Outcome != "TARGET" || string(read.Data) != "hello" {
		t.Errorf("read -o json = %+v, %v", read, err)
	}
	if out, code := s.run(t, "read", id, "COMMITTED", "1", "--object-dir", s.objects); code != 0 || !strings.Contains(out, "EOF") {
		t.Errorf("read past the end: exit %d, %q", code, out)
	}

	var ev metadpb.ListEvidenceResponse
	unmarshalProto(t, mustRun("evidence", "list", id, "-o", "json"), &ev)
	if len(ev.Evidence) != 1 || ev.Evidence[0].Range.GetEnd() != 1 {
		t.Fatalf("evidence = %v", ev.Evidence)
	}
	key := ev.Evidence[0].Object.GetKey()
	if out := mustRun("evidence", "list", id); !strings.Contains(out, key) {
		t.Errorf("evidence table lacks %s:\n%s", key, out)
	}

	var obj metadpb.DescribeObjectResponse
	unmarshalProto(t, mustRun("object", "describe", key, "-o", "json"), &obj)
	if obj.Object.Ref.GetIdentity() != ev.Evidence[0].Object.GetIdentity() || obj.Object.Size != 5 {
		t.Errorf("object describe = %v", obj.Object)
	}
	var pin metadpb.PinResponse
	unmarshalProto(t, mustRun("object", "pin", key, "--ttl", "1m", "-o", "json"), &pin)
	if pin.PinId == 0 {
		t.Fatal("object pin returned no pin id")
	}
	unmarshalProto(t, mustRun("object", "describe", key, "-o", "json"), &obj)
	if obj.Object.Pins == 0 {
		t.Errorf("after pin, object shows %d pins", obj.Object.Pins)
	}
	mustRun("object", "release", fmt.Sprint(pin.PinId))
	if _, code := s.run(t, "object", "release", fmt.Sprint(pin.PinId)); code != 3 {
		t.Errorf("releasing a released pin: exit %d, want 3", code)
	}
	mustRun("object", "register", "other-key", "--identity", obj.Object.Ref.GetIdentity(), "--size", "5")
	unmarshalProto(t, mustRun("object", "describe", "other-key", "-o", "json"), &obj)
	if obj.Object.Size != 5 {
		t.Errorf("registered object = %v", obj.Object)
	}

	var rep metadpb.ReportCandidateFailureResponse
	unmarshalProto(t, mustRun("object", "report", id, "COMMITTED", "0/0@1", "--kind", "IO_ERROR", "-o", "json"), &rep)
	if rep.Quarantined {
		t.Error("an IO_ERROR report must not quarantine")
	}

	mustRun("index", "publish", id, "--generation", "1", "--coverage", "0-1", "--record", "0-1@"+key, "--object-dir", s.objects)
	mustRun("index", "retire", id, "COMMITTED", "1")
	var desc metadpb.DescribeStreamResponse
	unmarshalProto(t, mustRun("stream", "describe", id, "-o", "json"), &desc)
	for _, g := range desc.Generations {
		if g.Number == 1 {
			t.Errorf("generation 1 still listed (%s) after retire", g.Status)
		}
	}

	mustRun("stream", "delete", id)
	if _, code := s.run(t, "stream", "describe", id); code != 3 {
		t.Errorf("describe after delete: exit %d, want 3", code)
	}
}

func unmarshalProto(t *testing.T, out string, m proto.Message) {
	t.Helper()
	if err := protojson.Unmarshal([]byte(out), m); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
}

// TestSnapshotMessages: a save into a missing directory says so (not a
// stale .part file), and a truncated snapshot is called truncated (not a
// SHA-256 mismatch quoting stream bytes as a checksum).
func TestSnapshotMessages(t *testing.T) {
	s := startRealServer(t)
	dir := t.TempDir()
	out, code := s.run(t, "snapshot", "save", filepath.Join(dir, "nodir", "x.snap"))
	if code != 2 || !strings.Contains(out, "does not exist") || strings.Contains(out, ".part") {
		t.Errorf("save into a missing dir: exit %d\n%s", code, out)
	}
	good := filepath.Join(dir, "good.snap")
	if out, code := s.run(t, "snapshot", "save", good); code != 0 {
		t.Fatalf("save: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// An existing file is refused, untouched; --force replaces it.
	if out, code := s.run(t, "snapshot", "save", good); code != 2 || !strings.Contains(out, "--force") {
		t.Errorf("save over an existing file: exit %d\n%s", code, out)
	}
	if again, err := os.ReadFile(good); err != nil || !bytes.Equal(again, b) {
		t.Errorf("a refused save changed %s (%v)", good, err)
	}
	if out, code := s.run(t, "snapshot", "save", good, "--force"); code != 0 {
		t.Errorf("save --force: exit %d\n%s", code, out)
	}
	for _, cut := range []int{len(b) - 100, len(b) / 2} {
		short := filepath.Join(dir, fmt.Sprintf("short-%d.snap", cut))
		if err := os.WriteFile(short, b[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := s.run(t, "snapshot", "inspect", short)
		if code != 1 || !strings.Contains(out, "truncated") || strings.Contains(out, "the file says") {
			t.Errorf("inspect of a file cut to %d of %d bytes: exit %d\n%s", cut, len(b), code, out)
		}
	}
	flipped := append([]byte(nil), b...)
	flipped[len(flipped)/2] ^= 0xff
	bad := filepath.Join(dir, "bad.snap")
	if err := os.WriteFile(bad, flipped, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := s.run(t, "snapshot", "inspect", bad); code != 1 || !strings.Contains(out, "corrupted") || strings.Contains(out, "truncated") {
		t.Errorf("inspect of a corrupted file: exit %d\n%s", code, out)
	}
}

// TestResolveKeepsDiagnostic: a resolve that stays retryable until its
// deadline (every candidate excluded) exits 4 and still prints why each
// candidate was refused, not a bare DEADLINE_EXCEEDED.
func TestResolveKeepsDiagnostic(t *testing.T) {
	s := startRealServer(t)
	id := fmt.Sprint(s.stream)
	out, code := s.run(t, "index", "list", id, "--generation", "0", "-o", "json")
	var list metadpb.ListIndexResponse
	if code != 0 {
		t.Fatalf("index list: exit %d\n%s", code, out)
	}
	unmarshalProto(t, out, &list)
	if len(list.Records) != 1 {
		t.Fatalf("generation 0 has %d records", len(list.Records))
	}
	exclude := fmt.Sprintf("0/0@%d", list.Records[0].Version)
	out, code = s.run(t, "resolve", id, "COMMITTED", "0", "--exclude", exclude, "--timeout", "2s")
	if code != 4 || !strings.Contains(out, "resolve failed after") || !strings.Contains(out, "g0/0") || !strings.Contains(out, "RESOLVE_UNAVAILABLE") {
		t.Errorf("resolve excluding every candidate: exit %d\n%s", code, out)
	}
	if testing.Verbose() {
		t.Log(out)
	}
}

// TestStreamListSaysWhenMoreFollow: a page that stops short of the last
// stream says how to get the next one, and the last page says nothing.
func TestStreamListSaysWhenMoreFollow(t *testing.T) {
	s := startRealServer(t) // one stream, "s"
	for _, name := range []string{"s2", "s3"} {
		if out, code := s.run(t, "stream", "create", name); code != 0 {
			t.Fatalf("create %s: exit %d\n%s", name, code, out)
		}
	}
	out, code := s.run(t, "stream", "list", "--limit", "2")
	if code != 0 || !strings.Contains(out, "more streams follow: metad stream list --after") || strings.Contains(out, "s3") {
		t.Errorf("first page: exit %d\n%s", code, out)
	}
	out, code = s.run(t, "stream", "list", "--limit", "3")
	if code != 0 || strings.Contains(out, "more streams follow") || !strings.Contains(out, "s3") {
		t.Errorf("the whole list: exit %d\n%s", code, out)
	}
}

// TestRefusedAppendKeepsTheEpoch: an append refused for its arguments (a
// --count past the largest offset) is refused before the stream is opened
// for write: the writer epoch does not move.
func TestRefusedAppendKeepsTheEpoch(t *testing.T) {
	s := startRealServer(t)
	epoch := func() uint64 {
		out, code := s.run(t, "stream", "describe", fmt.Sprint(s.stream), "-o", "json")
		if code != 0 {
			t.Fatalf("describe: exit %d\n%s", code, out)
		}
		var d struct {
			Stream struct {
				WriterEpoch uint64 `json:"writer_epoch"`
			} `json:"stream"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return d.Stream.WriterEpoch
	}
	before := epoch()
	if before == 0 {
		t.Fatalf("writer epoch %d after the setup's append, want one", before)
	}
	out, code := s.run(t, "append", fmt.Sprint(s.stream), "--data", "x", "--count", "4611686018427387904", "--object-dir", s.objects)
	// The epoch first: the server refuses such an append too (exit 2), but
	// only after the open for write has moved it.
	if after := epoch(); after != before {
		t.Errorf("a refused append moved the writer epoch from %d to %d", before, after)
	}
	if code != 2 || !strings.Contains(out, "--count") {
		t.Fatalf("append past the largest offset: exit %d\n%s", code, out)
	}
}

// TestFailedPutKeepsTheEpoch: an append whose bytes the object store
// refuses fails before the stream is opened for write: the writer epoch
// does not move (it did: the open came first), and a later append works.
func TestFailedPutKeepsTheEpoch(t *testing.T) {
	s := startRealServer(t) // stream "s": one offset, epoch 1
	id := fmt.Sprint(s.stream)
	epoch := func() uint64 {
		t.Helper()
		out, code := s.run(t, "stream", "describe", id, "-o", "json")
		var d struct {
			Stream struct {
				WriterEpoch uint64 `json:"writer_epoch"`
			} `json:"stream"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
			t.Fatalf("describe: exit %d\n%s", code, out)
		}
		return d.Stream.WriterEpoch
	}
	before := epoch()
	// The local store keeps a key's versions in a directory named by the
	// key's SHA-256: a file in its place makes the next append's put fail.
	key := fmt.Sprintf("streams/%d/%020d-%020d", s.stream, 1, 2)
	sum := sha256.Sum256([]byte(key))
	blocker := filepath.Join(s.objects, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(blocker, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := s.run(t, "append", id, "--data", "x", "--object-dir", s.objects)
	if code == 0 {
		t.Fatalf("append with the store refusing its put: exit 0\n%s", out)
	}
	if after := epoch(); after != before {
		t.Errorf("an append whose put failed moved the writer epoch from %d to %d\n%s", before, after, out)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if out, code := s.run(t, "append", id, "--data", "x", "--object-dir", s.objects); code != 0 {
		t.Errorf("append once the store takes it: exit %d\n%s", code, out)
	}
	if after := epoch(); after != before+1 {
		t.Errorf("after one successful append the epoch is %d, want %d", after, before+1)
	}
}

// TestClientUsesTheClustersObjectStore: append and read without an object
// store flag, from a directory that is not the server's, write and read
// where the server keeps its objects; a flag naming another store is
// refused, naming both.
func TestClientUsesTheClustersObjectStore(t *testing.T) {
	s := startRealServer(t)
	elsewhere := t.TempDir()
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(s.bin, args...)
		cmd.Dir = elsewhere
		cmd.Env = append(os.Environ(), "METAD_ADDR="+s.addr)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	id := fmt.Sprint(s.stream)
	if out, code := run("append", id, "--data", "from elsewhere"); code != 0 {
		t.Fatalf("append without --object-dir: exit %d\n%s", code, out)
	}
	if out, code := run("read", id, "COMMITTED", "1"); code != 0 || out != "from elsewhere" {
		t.Fatalf("read without --object-dir: exit %d, %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "metad-data")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the client wrote a store of its own in its working directory (%v)", err)
	}
	other := t.TempDir()
	out, code := run("append", id, "--data", "lost", "--object-dir", other)
	if code != 2 || !strings.Contains(out, other) || !strings.Contains(out, s.objects) {
		t.Errorf("append to another store: exit %d, want 2 naming both stores\n%s", code, out)
	}
	if out, code := run("append", id, "--data", "same dir", "--object-dir", s.objects); code != 0 {
		t.Errorf("append naming the servers' own directory: exit %d\n%s", code, out)
	}
}

// TestDataSnapshotRefusesAnIndexItDoesNotHold: `data snapshot --index N`
// beyond the data dir's last index is bad usage naming --index and the
// highest index there is, and writes no file (it wrote the state at the
// last index, silently); at the last index it writes it, and it does not
// overwrite the file without --force.
func TestDataSnapshotRefusesAnIndexItDoesNotHold(t *testing.T) {
	s := startRealServer(t)
	s.c.Stop(0)
	dir := s.c.Nodes[0].DataDir
	out, code := s.run(t, "data", "inspect", "--data-dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("data inspect: exit %d\n%s", code, out)
	}
	var rep struct {
		Raft struct {
			LastIndex uint64 `json:"last_index"`
		} `json:"raft"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Raft.LastIndex == 0 {
		t.Fatalf("data inspect -o json: %v\n%s", err, out)
	}
	last := rep.Raft.LastIndex
	file := filepath.Join(t.TempDir(), "beyond.snap")
	out, code = s.run(t, "data", "snapshot", file, "--data-dir", dir, "--index", fmt.Sprint(last+100))
	if code != exitUsage || !strings.Contains(out, "--index") || !strings.Contains(out, fmt.Sprintf("highest index is %d", last)) {
		t.Errorf("--index beyond the log: exit %d, want %d naming --index and %d\n%s", code, exitUsage, last, out)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused data snapshot wrote %s (%v)", file, err)
	}
	if out, code := s.run(t, "data", "snapshot", file, "--data-dir", dir, "--index", fmt.Sprint(last)); code != 0 {
		t.Errorf("--index %d (the last): exit %d\n%s", last, code, out)
	}
	// An existing file is refused, untouched, as snapshot save refuses it
	// (it was replaced without a word); --force replaces it.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := s.run(t, "data", "snapshot", file, "--data-dir", dir, "--index", fmt.Sprint(last)); code != exitUsage || !strings.Contains(out, "--force") {
		t.Errorf("data snapshot over an existing file: exit %d, want %d naming --force\n%s", code, exitUsage, out)
	}
	if again, err := os.ReadFile(file); err != nil || !bytes.Equal(again, b) {
		t.Errorf("a refused data snapshot changed %s (%v)", file, err)
	}
	if out, code := s.run(t, "data", "snapshot", file, "--data-dir", dir, "--force"); code != 0 {
		t.Errorf("data snapshot --force: exit %d\n%s", code, out)
	}
}

// TestServerValidateWritesNothing: `server --validate` exits 0 for
// settings that start and 2, naming the flag, for a bad setting or a busy
// port, and never creates or writes the data dir; a data dir a running
// server holds is refused too.
func TestServerValidateWritesNothing(t *testing.T) {
	tmp := t.TempDir()
	dataDir := filepath.Join(tmp, "data")
	ports := func() []string {
		return []string{"--grpc-addr", proc.FreePort(t), "--raft-addr", proc.FreePort(t), "--gossip-addr", proc.FreePort(t), "--http-addr", proc.FreePort(t)}
	}
	s := &realServer{bin: proc.Binary(t)}
	validate := func(args ...string) (string, int) {
		return s.run(t, append([]string{"server", "--validate"}, args...)...)
	}
	if out, code := validate(append(ports(), "--data-dir", dataDir)...); code != 0 || !strings.Contains(out, "the settings are valid") {
		t.Errorf("valid settings: exit %d\n%s", code, out)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	p := ports()
	p[1] = busy.Addr().String()
	if out, code := validate(append(p, "--data-dir", dataDir)...); code != exitUsage || !strings.Contains(out, "grpc-addr "+busy.Addr().String()) {
		t.Errorf("a busy --grpc-addr: exit %d, want %d naming it\n%s", code, exitUsage, out)
	}
	if out, code := validate(append(ports(), "--data-dir", dataDir, "--gossip-key-file", filepath.Join(tmp, "missing.keys"))...); code != exitUsage || !strings.Contains(out, "gossip-key-file") {
		t.Errorf("a missing --gossip-key-file: exit %d, want %d naming it\n%s", code, exitUsage, out)
	}
	if out, code := validate(append(ports(), "--data-dir", dataDir, "--object-dir", writeTemp(tmp, "a-file", "x"))...); code != exitUsage || !strings.Contains(out, "not a directory") {
		t.Errorf("an --object-dir that is a file: exit %d, want %d\n%s", code, exitUsage, out)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server --validate created the data dir (%v)", err)
	}

	running := startRealServer(t)
	held := running.c.Nodes[0].DataDir
	before := dirListing(t, held)
	if out, code := validate(append(ports(), "--data-dir", held)...); code != exitUsage || !strings.Contains(out, "in use") {
		t.Errorf("the data dir of a running server: exit %d, want %d\n%s", code, exitUsage, out)
	}
	if after := dirListing(t, held); after != before {
		t.Errorf("server --validate changed a data dir:\nbefore %s\nafter  %s", before, after)
	}
}

// dirListing names every file under dir with its size and mode, to tell
// whether anything was written.
func dirListing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if filepath.Base(path) == "raft" || strings.Contains(path, string(filepath.Separator)+"raft"+string(filepath.Separator)) {
			return nil // the running server's raft files change on their own
		}
		fmt.Fprintf(&b, "%s %d %v %v; ", path, info.Size(), info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestBadEnvironmentValueIsBadUsage: a METAD_* variable whose value does
// not parse is bad usage (exit 2) naming the variable, as a bad flag or a
// bad config-file value is (it exited 1), and the refused start writes no
// data dir. TestExitCodes's cases share one environment, hence this one.
func TestBadEnvironmentValueIsBadUsage(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "d")
	for _, env := range []string{"METAD_PIN_TTL=soon", "METAD_BOOTSTRAP_EXPECT=three"} {
		cmd := exec.Command(proc.Binary(t), "server", "--data-dir", dataDir)
		cmd.Env = append(os.Environ(), env)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		name, _, _ := strings.Cut(env, "=")
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), name) {
			t.Errorf("%s metad server: %v, want exit 2 naming %s\n%s", env, err, name, out)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the refused start created its data dir (%v)", env, err)
		}
	}
}
