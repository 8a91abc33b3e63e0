package faultfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mount(t *testing.T) (*FS, string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a FUSE filesystem needs root (CI runs as root)")
	}
	backing, mnt := t.TempDir(), t.TempDir()
	f, err := Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, backing, mnt
}

func content(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A failed fsync drops what was written since the last good one, in the
// backing file, and says EIO; a later fsync succeeds over the hole.
func TestFailedFsyncDropsUnsyncedWrites(t *testing.T) {
	f, backing, mnt := mount(t)
	file, err := os.Create(filepath.Join(mnt, "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	mustWrite(t, file, "synced|")
	if err := file.Sync(); err != nil {
		t.Fatalf("sync with no fault: %v", err)
	}
	mustWrite(t, file, "lost")
	if _, err := file.WriteAt([]byte("XX"), 0); err != nil {
		t.Fatal(err)
	}
	f.Fail(Fsync, "seg")
	if err := file.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync with the fault armed: %v, want EIO", err)
	}
	if got := content(t, filepath.Join(backing, "seg")); !bytes.Equal(got, []byte("synced|")) {
		t.Fatalf("backing file after the failed sync: %q, want only the synced bytes", got)
	}
	f.Heal()
	if err := file.Sync(); err != nil {
		t.Fatalf("a second sync after the failure: %v (it succeeds, the data gone)", err)
	}
	if f.Injected(Fsync) != 1 {
		t.Fatalf("injected %d fsync faults, want 1", f.Injected(Fsync))
	}
}

func TestLoseUnsyncedKeepsOnlySyncedBytes(t *testing.T) {
	f, backing, mnt := mount(t)
	path := filepath.Join(mnt, "a")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, file, "one|")
	if err := file.Sync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, file, "two|")
	file.Close()
	if err := f.LoseUnsynced(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, filepath.Join(backing, "a")); string(got) != "one|" {
		t.Fatalf("after losing unsynced writes: %q, want %q", got, "one|")
	}
}

func TestFailedWriteWritesNothing(t *testing.T) {
	f, backing, mnt := mount(t)
	if err := os.Mkdir(filepath.Join(mnt, "wal"), 0o750); err != nil {
		t.Fatal(err)
	}
	file, err := os.Create(filepath.Join(mnt, "wal", "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	f.Fail(Write, "wal/")
	if _, err := file.Write([]byte("nope")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write with the fault armed: %v, want EIO", err)
	}
	if got := content(t, filepath.Join(backing, "wal", "x")); len(got) != 0 {
		t.Fatalf("a failed write wrote %q", got)
	}
}

func mustWrite(t *testing.T, f *os.File, s string) {
	t.Helper()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
