package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/cmd/internal/cliflags"
	"github.com/metad/metad/raftstore"
)

func TestProgressLine(t *testing.T) {
	p := &progress{label: "restore", total: 4 << 20}
	p.done = 1 << 20
	got := p.line(time.Second)
	for _, want := range []string{"restore", "[======>", " 25%", "1.0 MiB / 4.0 MiB", "1.0 MiB/s"} {
		if !strings.Contains(got, want) {
			t.Errorf("line %q lacks %q", got, want)
		}
	}
	p.done = 5 << 20 // more than announced: clamped, no panic
	if got := p.line(time.Second); !strings.Contains(got, "100%") || strings.Contains(got, ">") {
		t.Errorf("overfull line %q", got)
	}
	unknown := &progress{label: "save", done: 1536}
	if got := unknown.line(time.Second); !strings.Contains(got, "1.5 KiB") || strings.Contains(got, "[") {
		t.Errorf("unknown-total line %q", got)
	}
}

// A progress bar on something that is not a terminal draws nothing.
func TestProgressSilentWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, "save", 10)
	_, _ = p.Writer(&bytes.Buffer{}).Write([]byte("0123456789"))
	p.Finish()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if buf.Len() != 0 || cliflags.IsTerminal(f) {
		t.Errorf("drew %q; file is terminal: %v", buf.String(), cliflags.IsTerminal(f))
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 29: "1.5 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseServers(t *testing.T) {
	got, err := parseServers([]string{"n1=10.0.0.1:7421", "n2=10.0.0.2:7421,nonvoter"})
	if err != nil || len(got) != 2 || got[0].Suffrage != raftstore.Voter || got[1].Suffrage != raftstore.Nonvoter || got[1].Address != "10.0.0.2:7421" {
		t.Fatalf("parseServers = %+v, %v", got, err)
	}
	for _, bad := range []string{"n1", "=10.0.0.1:7421", "n1=", "n1=10.0.0.1:7421,boss"} {
		if _, err := parseServers([]string{bad}); err == nil {
			t.Errorf("parseServers(%q) accepted", bad)
		}
	}
}

func TestRecoveryConfiguration(t *testing.T) {
	rep := &dataReport{NodeID: "n1", Raft: raftstore.DirInfo{Servers: []raftstore.Server{
		{ID: "n1", Address: "10.0.0.1:7421", Suffrage: raftstore.Voter},
		{ID: "n2", Address: "10.0.0.2:7421", Suffrage: raftstore.Voter},
	}}}
	got, err := newConfiguration(rep, "", nil)
	if err != nil || len(got) != 1 || got[0].ID != "n1" || got[0].Address != "10.0.0.1:7421" {
		t.Fatalf("default: %+v %v", got, err)
	}
	peers := filepath.Join(t.TempDir(), "peers.json")
	_ = os.WriteFile(peers, []byte(`[{"id":"n1","address":"10.0.0.9:7421"},{"id":"n4","address":"10.0.0.4:7421","non_voter":true}]`), 0o600)
	got, err = newConfiguration(rep, peers, nil)
	if err != nil || len(got) != 2 || got[0].Address != "10.0.0.9:7421" || got[1].Suffrage != raftstore.Nonvoter {
		t.Fatalf("peers file: %+v %v", got, err)
	}
	if _, err := newConfiguration(rep, "", []string{"n2=10.0.0.2:7421"}); err == nil {
		t.Error("a configuration without this server accepted")
	}
	if _, err := newConfiguration(rep, "", []string{"n1=10.0.0.1:7421,nonvoter"}); err == nil {
		t.Error("this server as a non-voter accepted")
	}
	if _, err := newConfiguration(rep, peers, []string{"n1=10.0.0.1:7421"}); err == nil {
		t.Error("both --peers-file and --server accepted")
	}
	alone := &dataReport{NodeID: "n9", Raft: rep.Raft}
	if _, err := newConfiguration(alone, "", nil); err == nil {
		t.Error("default for a server outside its own configuration accepted")
	}
}

func TestConfirm(t *testing.T) {
	var out bytes.Buffer
	if err := confirm(strings.NewReader("n1\n"), &out, "n1"); err != nil {
		t.Errorf("typed the id: %v", err)
	}
	for _, in := range []string{"", "yes\n", "n2\n", "n1x"} {
		if err := confirm(strings.NewReader(in), &out, "n1"); err == nil {
			t.Errorf("confirm(%q) accepted", in)
		}
	}
}
