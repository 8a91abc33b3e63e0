package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/node"
)

// TestGossipKeyCreate: the command prints a 32-byte base64 key that a key
// file accepts, a new one each time.
func TestGossipKeyCreate(t *testing.T) {
	create := func() string {
		cmd := newTLSCmd()
		var out bytes.Buffer
		cmd.SetArgs([]string{"gossip-key", "create"})
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	a, b := create(), create()
	if k, err := base64.StdEncoding.DecodeString(a); err != nil || len(k) != 32 {
		t.Fatalf("key %q: %d bytes, %v", a, len(k), err)
	}
	if a == b {
		t.Fatal("two keys alike")
	}
	path := filepath.Join(t.TempDir(), "gossip.keys")
	if err := os.WriteFile(path, []byte("# primary first\n"+a+"\n\n"+b+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := node.LoadGossipKeys(path)
	if err != nil || len(keys) != 2 {
		t.Fatalf("load: %d keys, %v", len(keys), err)
	}
}

// TestBadGossipKeyFileExits2: a key file that is not base64, holds a key
// of the wrong length, or holds none refuses the start with exit 2 and a
// message naming the flag, before anything is written.
func TestBadGossipKeyFileExits2(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"not base64": "this is not base64!\n",
		"10 bytes":   base64.StdEncoding.EncodeToString(make([]byte, 10)) + "\n",
		"empty":      "# nothing\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			c := proc.New(t, 1)
			out, code := runToExit(t, append(c.Nodes[0].Args, "--gossip-key-file", path)...)
			if code != 2 || !strings.Contains(out, "gossip-key-file") {
				t.Fatalf("exit %d, want 2 naming gossip-key-file:\n%s", code, out)
			}
			if _, err := os.Stat(c.Nodes[0].DataDir); !os.IsNotExist(err) {
				t.Errorf("the refused start left %s behind", c.Nodes[0].DataDir)
			}
		})
	}
}
