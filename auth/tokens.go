package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// ErrBadTokens is wrapped by every error about the tokens file.
var ErrBadTokens = errors.New("auth: bad tokens file")

// TokenEntry is one line of the tokens file: a token's SHA-256 (hex), a
// name for logs, and its role (reader, writer or operator).
type TokenEntry struct {
	Name   string `json:"name" yaml:"name"`
	SHA256 string `json:"sha256" yaml:"sha256"`
	Role   string `json:"role" yaml:"role"`
}

// tokensFile is the file's shape, YAML or JSON:
//
//	tokens:
//	  - name: broker-1
//	    sha256: 9f86d0...   # sha256sum of the token, hex
//	    role: writer
type tokensFile struct {
	Tokens []TokenEntry `json:"tokens" yaml:"tokens"`
}

// HashToken is the hex SHA-256 of a token, as the file stores it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

type tokenInfo struct {
	name string
	role Role
}

// Tokens is the current content of a tokens file.
type Tokens struct {
	path string
	log  *slog.Logger

	mu     sync.RWMutex
	byHash map[string]tokenInfo
	raw    []byte
}

// LoadTokens reads path; an error names what is wrong in it.
func LoadTokens(path string, log *slog.Logger) (*Tokens, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tokens{path: path, log: log}
	if _, err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload re-reads the file and reports whether it changed. On an error
// the previous tokens stay in force.
func (t *Tokens) Reload() (bool, error) {
	b, err := os.ReadFile(t.path)
	if err != nil {
		return false, fmt.Errorf("%w: auth-tokens-file: %w", ErrBadTokens, err)
	}
	t.mu.RLock()
	same := t.byHash != nil && string(b) == string(t.raw)
	t.mu.RUnlock()
	if same {
		return false, nil
	}
	m, err := parseTokens(b)
	if err != nil {
		return false, fmt.Errorf("auth-tokens-file %s: %w", t.path, err)
	}
	t.mu.Lock()
	t.byHash, t.raw = m, b
	t.mu.Unlock()
	return true, nil
}

func parseTokens(b []byte) (map[string]tokenInfo, error) {
	var f tokensFile
	var err error
	if trimmed := strings.TrimSpace(string(b)); strings.HasPrefix(trimmed, "{") {
		err = json.Unmarshal(b, &f)
	} else {
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		err = dec.Decode(&f)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTokens, err)
	}
	m := make(map[string]tokenInfo, len(f.Tokens))
	for i, e := range f.Tokens {
		h := strings.ToLower(strings.TrimSpace(e.SHA256))
		if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("%w: tokens[%d].sha256: want 64 hex digits (sha256 of the token)", ErrBadTokens, i)
		}
		r, err := ParseRole(e.Role)
		if err != nil || r == Peer {
			return nil, fmt.Errorf("%w: tokens[%d].role %q: want reader, writer or operator", ErrBadTokens, i, e.Role)
		}
		if e.Name == "" {
			return nil, fmt.Errorf("%w: tokens[%d].name: required", ErrBadTokens, i)
		}
		if _, dup := m[h]; dup {
			return nil, fmt.Errorf("%w: tokens[%d]: the same token hash appears twice", ErrBadTokens, i)
		}
		m[h] = tokenInfo{name: e.Name, role: r}
	}
	return m, nil
}

// Lookup returns the name and role of token.
func (t *Tokens) Lookup(token string) (string, Role, bool) {
	h := HashToken(token)
	t.mu.RLock()
	defer t.mu.RUnlock()
	info, ok := t.byHash[h]
	return info.name, info.role, ok
}

// ReloadAndLog reloads and logs the outcome.
func (t *Tokens) ReloadAndLog(why string) {
	changed, err := t.Reload()
	switch {
	case err != nil:
		t.log.Warn("auth: tokens reload failed; keeping the previous tokens", "why", why, "err", err)
	case changed:
		t.mu.RLock()
		n := len(t.byHash)
		t.mu.RUnlock()
		t.log.Info("auth: tokens reloaded", "why", why, "tokens", n)
	}
}
