package statestore

import (
	"fmt"
	"os"
	"path/filepath"
)

// Builder builds a whole state in a new database beside the live one (a
// snapshot being installed), which Activate makes live atomically.
type Builder struct {
	st  *Store
	cfg Config
}

// NewBuilder opens an empty database in dir's next db-N. dir must hold a
// store (Open made it); the live database is not touched.
func NewBuilder(dir string, cfg Config) (*Builder, error) {
	live, err := readActive(dir)
	if err != nil {
		return nil, fmt.Errorf("statestore: builder: %w", err)
	}
	// After every existing db-N: a retired one may still be read.
	n, _ := dbNumber(live)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("statestore: builder: %w", err)
	}
	for _, e := range entries {
		if m, ok := dbNumber(e.Name()); ok && m > n {
			n = m
		}
	}
	name := fmt.Sprintf("db-%d", n+1)
	if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
		return nil, fmt.Errorf("statestore: builder: %w", err)
	}
	st, err := openDB(dir, name, cfg)
	if err != nil {
		return nil, err
	}
	return &Builder{st: st, cfg: cfg}, nil
}

// Store is the database being built: write the state into it, Commit as
// often as suits, and Activate or Abort.
func (b *Builder) Store() *Store { return b.st }

// Activate syncs the built database and makes it the live one: ACTIVE
// names it from now on (a crash before that leaves the old one live).
// Retire the old store (it removes its directory once no View reads it;
// Open removes it otherwise). It returns the built store, open and live.
func (b *Builder) Activate() (*Store, error) {
	st := b.st
	st.Commit()
	if err := st.Sync(); err != nil {
		return nil, err
	}
	if err := writeActive(st.dir, st.dbName); err != nil {
		return nil, err
	}
	return st, nil
}

// Abort closes and removes the database being built.
func (b *Builder) Abort() {
	_ = b.st.Close()
	_ = os.RemoveAll(b.st.Path())
}
