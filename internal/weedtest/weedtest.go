// Package weedtest runs a real S3 server for tests and the Jepsen harness:
// SeaweedFS `weed mini`, started on free loopback ports in a
// directory and stopped at the end. Credentials are enforced (an s3.config
// with one identity), so a test can also present wrong ones.
//
// The binary is $METAD_WEED, else the one scripts/weed.sh caches under
// ~/.cache/metad/weed-*/weed. If neither exists the test fails — it does
// not skip — and says to run scripts/weed.sh (CI does, before the tests).
//
// Each helper comes twice: an error-returning core (FindBinary, Launch,
// Relaunch, CreateBucket, Env) that the Jepsen harness, a program, calls,
// and the testing.TB form tests call (Binary, Start, Restart, Bucket,
// SetCredentials), which fails the test on an error.
package weedtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/internal/ports"
	"github.com/metad/metad/objectstore"
)

// Credentials the server accepts.
const (
	AccessKey = "metadtest"
	SecretKey = "metadtest-secret"
	Region    = "us-east-1"
)

// Server is one running weed mini.
type Server struct {
	// Endpoint is the S3 API's base URL, http://127.0.0.1:PORT.
	Endpoint string
	// Admin is an S3 client with good credentials, for what a test does
	// behind metad's back (overwrites, deletes, listing versions).
	Admin *s3.Client
	bin   string
	args  []string
	dir   string
	log   string
	cmd   *exec.Cmd
	done  chan struct{} // closed when cmd has exited
}

// Binary returns the weed binary's path (see FindBinary), failing t if
// there is none.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := FindBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// FindBinary returns the weed binary's path: $METAD_WEED, else what
// scripts/weed.sh prints, which builds the pinned version once per machine
// (several minutes the first time; test binaries running at once wait for
// one build) and answers at once after that.
func FindBinary() (string, error) {
	if p := os.Getenv("METAD_WEED"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("METAD_WEED=%s: %w", p, err)
		}
		return p, nil
	}
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	script := filepath.Join(filepath.Dir(strings.TrimSpace(string(mod))), "scripts", "weed.sh")
	var stderr strings.Builder
	cmd := exec.Command("bash", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("no SeaweedFS weed binary: bash %s: %w\n%s", script, err, tail([]byte(stderr.String()), 4096))
	}
	return strings.TrimSpace(string(out)), nil
}

// Start runs weed mini in a temporary directory, stops it when the test
// ends, and waits until its S3 API answers.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	s, err := Launch(bin, t.TempDir())
	if s != nil {
		t.Cleanup(func() {
			s.Stop()
			if t.Failed() {
				t.Logf("weed mini log (last 4 KiB):\n%s", s.LogTail())
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Launch runs weed mini (binary bin) with its configuration, data and log
// in dir, on free loopback ports, and waits until its S3 API answers. The
// caller stops it (Stop); on an error after the start it is stopped
// already, and the Server is returned for its log.
func Launch(bin, dir string) (*Server, error) {
	dir, err := filepath.Abs(dir) // weed runs in dir: its paths must not be relative to ours
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "s3.json")
	if err := writeS3Config(conf); err != nil {
		return nil, err
	}
	s3Addr, err := free()
	if err != nil {
		return nil, err
	}
	args := []string{"mini", "-dir=" + filepath.Join(dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-s3.config=" + conf, "-s3.port=" + port(s3Addr), "-admin.port.legacy=0",
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false", "-master.telemetry=false"}
	for _, flag := range []string{"s3.port.grpc", "master.port", "master.port.grpc", "filer.port", "filer.port.grpc",
		"volume.port", "volume.port.grpc", "webdav.port", "admin.port", "admin.port.grpc"} {
		addr, err := free()
		if err != nil {
			return nil, err
		}
		args = append(args, "-"+flag+"="+port(addr))
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	s := &Server{Endpoint: "http://" + s3Addr, log: filepath.Join(dir, "weed.log"), bin: bin, args: args, dir: dir}
	s.Admin = s.Client(AccessKey, SecretKey)
	if err := s.Relaunch(); err != nil {
		return s, err
	}
	return s, nil
}

// start runs the process; its log is appended to.
func (s *Server) start() error {
	logFile, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.done = make(chan struct{})
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		close(s.done)
		return err
	}
	done := s.done
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(done) }()
	return nil
}

// Restart starts a stopped server again on the same ports and data, and
// waits until it answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.Relaunch(); err != nil {
		t.Fatal(err)
	}
}

// Relaunch starts a stopped server again on the same ports and data, and
// waits until it answers (the first start, too). On an error the server is
// stopped.
func (s *Server) Relaunch() error {
	if err := s.start(); err != nil {
		return err
	}
	if err := s.waitReady(); err != nil {
		s.Stop()
		return err
	}
	return nil
}

// Stop kills weed mini and its children and waits for it.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// Pause stops weed mini and its children with SIGSTOP: the S3 port still
// accepts connections, and nothing answers. Resume continues them.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, sig)
}

// Running reports whether the process is alive (paused or not).
func (s *Server) Running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// LogTail is the last 4 KiB of the server's log.
func (s *Server) LogTail() string {
	b, _ := os.ReadFile(s.log)
	return string(tail(b, 4096))
}

// Dir is the server's directory (configuration, data and log).
func (s *Server) Dir() string { return s.dir }

func free() (string, error) { return ports.Free(20000, 32000) }

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func writeS3Config(path string) error {
	conf := map[string]any{"identities": []any{map[string]any{
		"name":        "metadtest",
		"credentials": []any{map[string]string{"accessKey": AccessKey, "secretKey": SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}
	b, _ := json.Marshal(conf)
	return os.WriteFile(path, b, 0o600)
}

// Client is an S3 client of this server with the given credentials.
func (s *Server) Client(accessKey, secretKey string) *s3.Client {
	return s3.New(s3.Options{
		Region: Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// waitReady polls the S3 API (not a sleep) until a bucket listing works.
func (s *Server) waitReady() error {
	deadline := clock.Real.Now().Add(90 * time.Second)
	var err error
	for clock.Real.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("weed mini exited at start:\n%s", s.LogTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = s.Admin.ListBuckets(ctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			return nil
		}
		<-clock.After(clock.Real, 100*time.Millisecond) // poll interval, not synchronisation
	}
	return fmt.Errorf("weed mini's S3 API at %s not ready in 90s: %w", s.Endpoint, err)
}

// Bucket creates a bucket, with versioning enabled if versioned, failing
// t on an error.
func (s *Server) Bucket(t testing.TB, name string, versioned bool) {
	t.Helper()
	if err := s.CreateBucket(name, versioned); err != nil {
		t.Fatal(err)
	}
}

// CreateBucket creates a bucket, with versioning enabled if versioned,
// retrying while the server finishes starting its parts.
func (s *Server) CreateBucket(name string, versioned bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		_, err := s.Admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
		var owned *types.BucketAlreadyOwnedByYou
		if err == nil || errors.As(err, &owned) {
			break
		}
		var resp *awshttp.ResponseError
		if ctx.Err() != nil || (errors.As(err, &resp) && resp.HTTPStatusCode() < 500) {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
		<-clock.After(clock.Real, 200*time.Millisecond) // poll interval
	}
	if !versioned {
		return nil
	}
	if _, err := s.Admin.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		return fmt.Errorf("enable versioning on %s: %w", name, err)
	}
	return nil
}

// SetCredentials points the AWS SDK's default chain, in this process and
// the processes it starts, at this server's credentials (or others).
func SetCredentials(t testing.TB, accessKey, secretKey string) {
	for _, kv := range Env(accessKey, secretKey) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Env is the environment (KEY=VALUE) that points the AWS SDK's default
// chain at the given credentials and nothing else: no shared config or
// credentials file, no instance metadata.
func Env(accessKey, secretKey string) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + secretKey, "AWS_REGION=" + Region,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull}
}

// StoreConfig is the objectstore configuration of s3://bucket/prefix here.
func (s *Server) StoreConfig(bucket, prefix string) objectstore.Config {
	u := "s3://" + bucket
	if prefix != "" {
		u += "/" + strings.Trim(prefix, "/")
	}
	return objectstore.Config{URL: u, S3: objectstore.S3Config{Endpoint: s.Endpoint, PathStyle: true}}
}

// Versions lists every version of key in bucket (newest first), as
// (VersionId, ETag without quotes) pairs, delete markers excluded.
func (s *Server) Versions(t testing.TB, bucket, key string) [][2]string {
	t.Helper()
	out, err := s.Admin.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		t.Fatalf("list versions of %s: %v", key, err)
	}
	var vs [][2]string
	for _, v := range out.Versions {
		if aws.ToString(v.Key) == key {
			vs = append(vs, [2]string{aws.ToString(v.VersionId), strings.Trim(aws.ToString(v.ETag), `"`)})
		}
	}
	return vs
}

// String names the server in messages.
func (s *Server) String() string { return fmt.Sprintf("weed mini at %s", s.Endpoint) }
