package objectstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// CheckConfig accepts a file:// directory that exists or can be created,
// refuses one that is a file, and creates nothing.
func TestCheckConfigCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "a", "b")
	if err := CheckConfig(context.Background(), Config{URL: FileURL(missing)}); err != nil {
		t.Errorf("a directory that can be created: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CheckConfig created %s (%v)", filepath.Join(dir, "a"), err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckConfig(context.Background(), Config{URL: FileURL(filepath.Join(file, "objects"))}); err == nil {
		t.Error("a path under a file: accepted")
	}
}
