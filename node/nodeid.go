package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const nodeIDFile = "node-id"

// LoadNodeID returns the node's stable id. The first start stores it in
// the data dir (the given id, or a new random one); later starts must agree
// with what is stored, because Raft knows the server by that id: silently
// taking a new one would make the node a stranger to its own cluster.
func LoadNodeID(dataDir, given string) (string, error) {
	path := filepath.Join(dataDir, nodeIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		stored := strings.TrimSpace(string(b))
		if given != "" && given != stored {
			return "", fmt.Errorf("node-id %q differs from %q stored in %s; a node's id never changes (use a new data dir for a new node)", given, stored, path)
		}
		return stored, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	id := given
	if id == "" {
		var r [4]byte
		_, _ = rand.Read(r[:])
		id = "node-" + hex.EncodeToString(r[:])
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", err
	}
	return id, os.WriteFile(path, []byte(id+"\n"), 0o644)
}

// StoredNodeID returns the node id stored in dataDir, without creating
// one: offline commands must not give a data dir an identity it never had.
func StoredNodeID(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, nodeIDFile))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// RaftDir is where a node keeps its raft state inside its data dir.
func RaftDir(dataDir string) string { return filepath.Join(dataDir, "raft") }
