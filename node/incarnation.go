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

const incarnationFile = "incarnation"

// LoadIncarnation returns the data dir's incarnation id, creating a random
// one the first time. The node id names a server; the incarnation names
// one life of its data: a wiped data dir, or a copy of one started
// elsewhere, gets a new incarnation, and the cluster tells it apart from
// the server it replaces (membership/doc.go, "Incarnations"). A data dir
// of a release before incarnations gets one on its first start with this
// release; that is not a new life (its raft state is there), and no
// leader knew an older incarnation to compare it with.
func LoadIncarnation(dataDir string) (string, error) {
	path := filepath.Join(dataDir, incarnationFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		inc := strings.TrimSpace(string(b))
		if inc == "" || len(inc) > 64 {
			return "", fmt.Errorf("%s: incarnation %q is not 1..64 bytes; the file is damaged", path, inc)
		}
		return inc, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	inc := hex.EncodeToString(r[:])
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", err
	}
	// Written durably (durablefile.go), so a crash never leaves an empty
	// incarnation behind.
	return inc, writeDurably(path, []byte(inc+"\n"))
}
