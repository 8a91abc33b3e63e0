package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
)

// The read workloads against a real 3-node cluster and its object store
// (the shared directory here; bench/compare.sh STORE=s3 runs them against
// weed mini): both load the same streams, every read is answered, and
// each run reports its own workload.
func TestReadAndGetWorkloadsAgainstARealCluster(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	c.WaitFor("a leader", 30*time.Second, func() bool { return c.Leader(0) >= 0 })
	addrs := c.Nodes[0].GRPC + "," + c.Nodes[1].GRPC + "," + c.Nodes[2].GRPC
	for _, workload := range []string{"read", "get"} {
		rep := runBenchJSON(t, "--addr", addrs, "--workload", workload, "-c", "2", "--duration", "500ms", "--warmup", "0s",
			"--streams", "2", "--appends", "3", "--payload", "8192", "--read-size", "1024",
			"--object-dir", filepath.Join(c.Dir, "objects"), "-o", "json")
		if rep.Workload != workload || rep.ReadSize != 1024 || rep.Streams != 2 {
			t.Errorf("%s: report %+v", workload, rep)
		}
		if rep.Ops == 0 || len(rep.Errors) != 0 {
			t.Errorf("%s: %d ops, errors %v", workload, rep.Ops, rep.Errors)
		}
	}
}

// --no-data-checksum: what the bench writes carries no data checksum, so
// the same read workload, through client.Read, reads unchecked; without it
// every read is checked.
func TestClientReadWithAndWithoutDataChecksums(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	c.WaitFor("a leader", 30*time.Second, func() bool { return c.Leader(0) >= 0 })
	addrs := c.Nodes[0].GRPC + "," + c.Nodes[1].GRPC + "," + c.Nodes[2].GRPC
	for _, unchecked := range []bool{false, true} {
		args := []string{"--addr", addrs, "--workload", "read", "--client-read", "-c", "2", "--duration", "500ms",
			"--warmup", "0s", "--streams", "2", "--appends", "3", "--payload", "4096",
			"--object-dir", filepath.Join(c.Dir, "objects"), "-o", "json"}
		if unchecked {
			args = append(args, "--no-data-checksum")
		}
		rep := runBenchJSON(t, args...)
		if rep.NoDataChecksum != unchecked || !rep.ClientRead || rep.Ops == 0 || len(rep.Errors) != 0 {
			t.Errorf("--no-data-checksum=%v: report %+v", unchecked, rep)
		}
		got, other := rep.CheckedReads, rep.UncheckedReads
		if unchecked {
			got, other = other, got
		}
		if got < rep.Ops || other != 0 {
			t.Errorf("--no-data-checksum=%v: %d ops, %d reads checked, %d unchecked", unchecked, rep.Ops, rep.CheckedReads, rep.UncheckedReads)
		}
	}
}

func runBenchJSON(t *testing.T, args ...string) benchReport {
	t.Helper()
	cmd := newBenchCmd()
	cmd.SetArgs(args)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("metad-bench %v: %v\n%s", args, err, errOut.String())
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("metad-bench output is not a report: %v\n%s", err, out.String())
	}
	return rep
}

// commit-object against a real 3-node cluster: each worker's objects
// append to its own streams, so every commit lands (no CAS conflict, no
// error), and the report counts stream appends as objects times streams.
func TestCommitObjectWorkloadAgainstARealCluster(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	c.WaitFor("a leader", 30*time.Second, func() bool { return c.Leader(0) >= 0 })
	addrs := c.Nodes[0].GRPC + "," + c.Nodes[1].GRPC + "," + c.Nodes[2].GRPC
	rep := runBenchJSON(t, "--addr", addrs, "--workload", "commit-object", "--streams-per-object", "5", "-c", "2",
		"--duration", "500ms", "--warmup", "0s", "-o", "json")
	if rep.Workload != "commit-object" || rep.Streams != 10 || rep.EntriesPerOp != 5 || rep.MessageBytes == 0 {
		t.Errorf("report %+v", rep)
	}
	if rep.Ops == 0 || len(rep.Errors) != 0 {
		t.Errorf("%d ops, errors %v", rep.Ops, rep.Errors)
	}
	if rep.EntriesPerSecond != rep.Throughput*5 {
		t.Errorf("%v stream-appends/s at %v objects/s and 5 streams per object", rep.EntriesPerSecond, rep.Throughput)
	}
}
