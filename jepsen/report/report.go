// Package report writes what a Jepsen run found, into one directory:
//
//	history.jsonl   every fault and operation (history.ReadJSONL reads it)
//	history.html    porcupine's visualisation, faults shaded
//	latency.svg     latency of every operation and throughput, faults shaded
//	summary.json    the Result: counts, faults, anomalies, validity
//	summary.txt     the same for people
//	cluster/n*.log  each server's log
//
// A run passes only if it is valid (it did enough work before every fault
// and wrote successfully after the final heal) and found no anomaly.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// Convergence is the end-of-run comparison of the replicas.
type Convergence struct {
	Converged bool    `json:"converged"`
	Applied   uint64  `json:"applied_index,omitempty"`
	Hash      string  `json:"state_hash,omitempty"`
	Waited    float64 `json:"waited_seconds,omitempty"`
	Detail    string  `json:"detail,omitempty"`
}

// Converged reports whether every node in a status answer is at the same
// applied index with the same state hash; else why not.
func Converged(st *metadpb.StatusResponse) (Convergence, string) {
	if len(st.Nodes) == 0 {
		return Convergence{}, "status lists no node"
	}
	first := st.Nodes[0]
	var diffs []string
	for _, n := range st.Nodes {
		if n.Error != "" || n.State == "UNREACHABLE" {
			diffs = append(diffs, fmt.Sprintf("%s %s %s", n.NodeId, n.State, n.Error))
			continue
		}
		if n.AppliedIndex != first.AppliedIndex || !bytes.Equal(n.StateHash, first.StateHash) || len(n.StateHash) == 0 {
			diffs = append(diffs, fmt.Sprintf("%s applied=%d hash=%x", n.NodeId, n.AppliedIndex, short(n.StateHash)))
		}
	}
	if len(diffs) > 0 {
		return Convergence{}, fmt.Sprintf("%s applied=%d hash=%x; differs: %s", first.NodeId, first.AppliedIndex, short(first.StateHash), strings.Join(diffs, "; "))
	}
	return Convergence{Converged: true, Applied: first.AppliedIndex, Hash: fmt.Sprintf("%x", first.StateHash)}, ""
}

// Diverged reports whether two nodes of a status answer are at the same
// applied index with different state hashes. Waiting cannot mend that: the
// same index means the same commands, so their states should be equal.
func Diverged(st *metadpb.StatusResponse) bool {
	seen := map[uint64][]byte{}
	for _, n := range st.Nodes {
		if n.Error != "" || len(n.StateHash) == 0 {
			continue
		}
		if h, ok := seen[n.AppliedIndex]; ok && !bytes.Equal(h, n.StateHash) {
			return true
		}
		seen[n.AppliedIndex] = n.StateHash
	}
	return false
}

func short(b []byte) []byte {
	if len(b) > 8 {
		return b[:8]
	}
	return b
}

// Result is a run's verdict and its evidence.
type Result struct {
	Name         string      `json:"name"`
	Nodes        int         `json:"nodes"`
	Nemesis      []string    `json:"nemesis"`
	Profile      string      `json:"profile"`
	Seed         int64       `json:"seed"`
	Bugs         string      `json:"planted_bugs,omitempty"`
	TimeLimit    string      `json:"time_limit"`
	Seconds      float64     `json:"seconds"`
	Linearizable string      `json:"linearizable"`
	Convergence  Convergence `json:"convergence"`
	// Ops counts operations by kind, then status.
	Ops       map[string]map[history.Status]int `json:"ops"`
	Faults    []history.Fault                   `json:"faults"`
	Anomalies []model.Anomaly                   `json:"anomalies"`
	// Invalid lists why the run proves too little (empty: valid).
	Invalid []string `json:"invalid"`
	Passed  bool     `json:"passed"`
	// DiskFull counts operations refused DISK_FULL (any, and per
	// disk-full fault by its index in Faults).
	DiskFull       int         `json:"disk_full_refusals,omitempty"`
	DiskFullFaults map[int]int `json:"disk_full_refusals_by_fault,omitempty"`

	Lin model.Linearizability `json:"-"`
}

// Finish fills the counts and the verdict.
func (r *Result) Finish(h history.History) {
	r.Ops = map[string]map[history.Status]int{}
	for _, op := range h.Ops {
		if r.Ops[op.Kind] == nil {
			r.Ops[op.Kind] = map[history.Status]int{}
		}
		r.Ops[op.Kind][op.Status]++
	}
	r.Faults = h.Faults
	r.DiskFullFaults, r.DiskFull = DiskFullRefusals(h)
	if len(r.DiskFullFaults) == 0 {
		r.DiskFullFaults = nil
	}
	r.Passed = len(r.Anomalies) == 0 && len(r.Invalid) == 0
}

// Validity lists why a run did too little to prove anything: too few
// successful operations before a fault, a fault the nemesis could not
// complete, or no successful write after the final heal.
func Validity(h history.History, minOps int, finalHeal int64) []string {
	var out []string
	for _, f := range h.Faults {
		if f.OpsBefore < minOps {
			out = append(out, fmt.Sprintf("fault %s:%s began after only %d successful operations (want %d)", f.Kind, f.Shape, f.OpsBefore, minOps))
		}
		if f.Error != "" {
			out = append(out, fmt.Sprintf("fault %s:%s did not complete: %s", f.Kind, f.Shape, f.Error))
		}
	}
	wrote := false
	for _, op := range h.Ops {
		if op.Status == history.OK && op.Kind == history.KindAppend && op.Call >= finalHeal {
			wrote = true
			break
		}
	}
	if !wrote {
		out = append(out, "no successful append after the final heal")
	}
	return out
}

// WriteHistory writes history.jsonl, before the checkers run: a checker
// that runs out of time or memory still leaves the history to study.
func WriteHistory(dir string, h history.History) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return err
	}
	if err := h.WriteJSONL(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Write writes the report directory.
func Write(dir string, h history.History, r Result) error {
	if err := WriteHistory(dir, h); err != nil {
		return err
	}
	if hf, err := os.Create(filepath.Join(dir, "history.html")); err == nil {
		if err := model.Visualize(r.Lin, h.Faults, hf); err != nil {
			fmt.Fprintf(hf, "<p>visualisation failed: %v</p>", err)
		}
		hf.Close()
	}
	if err := os.WriteFile(filepath.Join(dir, "latency.svg"), []byte(Plot(h)), 0o644); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(r.Text(dir)), 0o644)
}

// Text is the summary for people.
func (r Result) Text(dir string) string {
	var b strings.Builder
	verdict := "PASSED"
	switch {
	case len(r.Anomalies) > 0:
		verdict = "FAILED: anomalies found"
	case len(r.Invalid) > 0:
		verdict = "INVALID: too little work to prove anything"
	}
	fmt.Fprintf(&b, "run %s: %s\n", r.Name, verdict)
	fmt.Fprintf(&b, "nodes=%d nemesis=%v workload=%s seed=%d time-limit=%s took=%.0fs", r.Nodes, r.Nemesis, r.Profile, r.Seed, r.TimeLimit, r.Seconds)
	if r.Bugs != "" {
		fmt.Fprintf(&b, " planted=%s", r.Bugs)
	}
	fmt.Fprintf(&b, "\nlinearizable (porcupine): %s\nconvergence: %+v\n\noperations (kind: status=count):\n", r.Linearizable, r.Convergence)
	kinds := make([]string, 0, len(r.Ops))
	for k := range r.Ops {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-9s", k)
		for _, s := range []history.Status{history.OK, history.Rejected, history.Fail, history.Info} {
			if n := r.Ops[k][s]; n > 0 {
				fmt.Fprintf(&b, " %s=%d", s, n)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nfaults (%d):\n", len(r.Faults))
	for i, f := range r.Faults {
		refused := ""
		if f.Kind == diskFullKind {
			refused = fmt.Sprintf("refused_disk_full=%d ", r.DiskFullFaults[i])
		}
		if d := f.Disk; d != nil && f.Kind == diskErrorKind {
			refused = fmt.Sprintf("failed_%s=%d exited=%v kept_running=%v ", d.Op, d.Injected, d.Exited, d.KeptRunning)
		}
		fmt.Fprintf(&b, "  %-12s %-18s %5.1fs targets=%v ops_before=%d %s%s %s\n", f.Kind, f.Shape,
			float64(f.End-f.Start)/1e9, f.Targets, f.OpsBefore, refused, f.Detail, f.Error)
	}
	if r.DiskFull > 0 {
		fmt.Fprintf(&b, "operations refused DISK_FULL: %d\n", r.DiskFull)
	}
	fmt.Fprintf(&b, "\nanomalies (%d):\n", len(r.Anomalies))
	for i, a := range r.Anomalies {
		if i == 50 {
			fmt.Fprintf(&b, "  ... %d more in summary.json\n", len(r.Anomalies)-50)
			break
		}
		fmt.Fprintf(&b, "  %s\n", a)
	}
	if len(r.Invalid) > 0 {
		fmt.Fprintf(&b, "\ninvalid because:\n  %s\n", strings.Join(r.Invalid, "\n  "))
	}
	fmt.Fprintf(&b, "\nfiles: %s/{history.jsonl,history.html,latency.svg,summary.json,cluster/n*.log}\n", dir)
	return b.String()
}

// diskFullKind and diskFullReason are the disk-full nemesis's kind and the
// reason of a write refused on a full disk (nemesis.DiskFull,
// nemesis.ReasonDiskFull; report does not import the nemesis).
const diskFullKind, diskFullReason = "disk-full", "DISK_FULL"

// DiskFullRefusals counts, per fault of the history (by index), the
// operations refused DISK_FULL whose call overlapped a disk-full fault,
// and every DISK_FULL refusal of the run.
func DiskFullRefusals(h history.History) (perFault map[int]int, total int) {
	perFault = map[int]int{}
	for _, op := range h.Ops {
		if op.Reason != diskFullReason {
			continue
		}
		total++
		for i, f := range h.Faults {
			if f.Kind == diskFullKind && op.Return >= f.Start && op.Call <= f.End {
				perFault[i]++
			}
		}
	}
	return perFault, total
}

// DiskFullValidity lists why the disk-full nemesis proved nothing: a
// fault that filled the leader's disk while no write was refused DISK_FULL
// (the servers never saw their disk below the reserve, or no client
// wrote), or a run whose disk-full faults never had a write refused.
func DiskFullValidity(h history.History) []string {
	perFault, _ := DiskFullRefusals(h)
	var out []string
	faults, bit := 0, 0
	for i, f := range h.Faults {
		if f.Kind != diskFullKind || f.Error != "" {
			continue
		}
		faults++
		bit += perFault[i]
		if f.LeaderFilled && perFault[i] == 0 {
			out = append(out, fmt.Sprintf("fault disk-full:%s filled the leader's disk (%v) but no write was refused DISK_FULL while it held", f.Shape, f.Targets))
		}
	}
	if faults > 0 && bit == 0 && len(out) == 0 {
		out = append(out, fmt.Sprintf("the disk-full nemesis never bit: %d faults, no write refused DISK_FULL while one held", faults))
	}
	return out
}

// diskErrorKind is the disk-error nemesis's kind (nemesis.DiskError).
const diskErrorKind = "disk-error"

// DiskChecks judges the disk-error faults: a target whose raft log fsync
// (or write) failed and that kept running is an anomaly of G17 (a failed
// fsync must stop the node, never be retried); a run that had disk-error
// faults of which none bit (an operation failed and its node exited)
// proved nothing and is invalid.
func DiskChecks(h history.History) (anomalies []model.Anomaly, invalid []string) {
	faults, bit := 0, 0
	for _, f := range h.Faults {
		if f.Kind != diskErrorKind || f.Error != "" || f.Disk == nil {
			continue
		}
		faults++
		for _, k := range f.Disk.KeptRunning {
			anomalies = append(anomalies, model.Anomaly{Check: "G17", Op: -1,
				Detail: fmt.Sprintf("the node kept running after a failed %s of its raft log: %s (fault disk-error:%s)", f.Disk.Op, k, f.Shape)})
		}
		if f.Disk.Injected > 0 && (len(f.Disk.Exited) > 0 || len(f.Disk.KeptRunning) > 0) {
			bit++
		}
	}
	if faults > 0 && bit == 0 {
		invalid = append(invalid, fmt.Sprintf("the disk-error nemesis never bit: %d faults, no raft log fsync or write failed on a node that then exited", faults))
	}
	return anomalies, invalid
}
