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

// LoadNodeID returns the node's stable id, storing it in the data dir on
// the first start: ChooseNodeID, then StoreNodeID.
func LoadNodeID(dataDir, given string) (string, error) {
	id, err := ChooseNodeID(dataDir, given)
	if err != nil {
		return "", err
	}
	return id, StoreNodeID(dataDir, id)
}

// ChooseNodeID returns the node's stable id without writing anything: the
// one stored in the data dir, or the given one, or a new random one. The
// first start stores it (StoreNodeID, which Start calls once the data dir
// is locked); later starts must agree with what is stored, because Raft
// knows the server by that id: silently taking a new one would make the
// node a stranger to its own cluster.
func ChooseNodeID(dataDir, given string) (string, error) {
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
		return "", fmt.Errorf("data-dir: %w", err)
	}
	if given != "" {
		return given, nil
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "node-" + hex.EncodeToString(r[:]), nil
}

// StoreNodeID records id in the data dir unless an id is stored already
// (ChooseNodeID checked that they agree).
func StoreNodeID(dataDir, id string) error {
	path := filepath.Join(dataDir, nodeIDFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	return writeDurably(path, []byte(id+"\n"))
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
