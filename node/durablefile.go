package node

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeDurably writes data to path so that a crash or a power cut leaves
// either the old file or the whole new one, never an empty or partial
// one: a temporary file, synced, renamed into place, and the directory
// synced so the rename itself survives. The node-id, incarnation and
// cluster-id files are written this way; a node that lost its node-id to
// a power cut could not start again under its id.
func writeDurably(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("sync the directory of %s: %w", path, err)
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("sync the directory of %s: %w", path, err)
	}
	return nil
}
