package node

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/metad/metad/membership"
)

// Gossip encryption (Security.GossipKeyFile): memberlist's keyring, as
// Consul's gossip key. The file holds one base64 key a line (16, 24 or 32
// bytes: AES-128, -192 or -256); the first encrypts, all are tried on
// receipt, and gossip that is not encrypted is refused. The file is
// re-read like the TLS files (every ReloadInterval and on SIGHUP), so keys
// rotate without a restart: give every node [old, new], then [new, old],
// then [new]. Blank lines and lines starting with # are ignored.

// NewGossipKey makes a random 32-byte gossip key, base64 (`metad tls
// gossip-key create`).
func NewGossipKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return base64.StdEncoding.EncodeToString(b[:])
}

// LoadGossipKeys reads and checks a gossip key file. Errors name the flag.
func LoadGossipKeys(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gossip-key-file: %w", err)
	}
	return parseGossipKeys(path, b)
}

func parseGossipKeys(path string, b []byte) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("gossip-key-file %s line %d: not base64: %w (make a key with: metad tls gossip-key create)", path, i+1, err)
		}
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return nil, fmt.Errorf("gossip-key-file %s line %d: a %d-byte key, want 16, 24 or 32 bytes (make one with: metad tls gossip-key create)", path, i+1, n)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("gossip-key-file %s: no key (make one with: metad tls gossip-key create)", path)
	}
	if err := membership.ValidateGossipKeys(keys); err != nil {
		return nil, fmt.Errorf("gossip-key-file %s: %w", path, err)
	}
	return keys, nil
}

// gossipKeys follows the key file and hands changes to the agent.
type gossipKeys struct {
	path  string
	agent *membership.Agent
	log   *slog.Logger
	mu    sync.Mutex
	last  []byte // the file's bytes last installed
}

func newGossipKeys(path string, agent *membership.Agent, log *slog.Logger) *gossipKeys {
	b, _ := os.ReadFile(path) // what Start loaded; a difference is a change
	return &gossipKeys{path: path, agent: agent, log: log, last: b}
}

// reload re-reads the file and installs its keys if it changed. A file
// that does not load is logged and the keys in use stay.
func (g *gossipKeys) reload(why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := os.ReadFile(g.path)
	if err == nil && bytes.Equal(b, g.last) {
		return
	}
	var keys [][]byte
	if err == nil {
		keys, err = parseGossipKeys(g.path, b)
	}
	if err == nil {
		err = g.agent.SetGossipKeys(keys)
	}
	if err != nil {
		g.log.Error("gossip keys not reloaded; the keys in use stay", "why", why, "err", err)
		return
	}
	g.last = b
	g.log.Info("gossip keys reloaded", "why", why, "keys", len(keys))
}
