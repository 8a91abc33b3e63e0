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
	if files, bytes := f.Unsynced(); files != 0 || bytes != 0 {
		t.Fatalf("after a sync: %d files, %d bytes unsynced, want none", files, bytes)
	}
	mustWrite(t, file, "two|")
	mustWrite(t, file, "three|")
	file.Close()
	if files, bytes := f.Unsynced(); files != 1 || bytes != int64(len("two|three|")) {
		t.Fatalf("unsynced: %d files, %d bytes, want 1 file, %d bytes", files, bytes, len("two|three|"))
	}
	if err := f.LoseUnsynced(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, filepath.Join(backing, "a")); string(got) != "one|" {
		t.Fatalf("after losing unsynced writes: %q, want %q", got, "one|")
	}
	if files, bytes := f.Unsynced(); files != 0 || bytes != 0 {
		t.Fatalf("after losing them: %d files, %d bytes unsynced, want none", files, bytes)
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

// LoseUnsynced after renames (a file written, synced and renamed into
// place; another written and renamed unsynced; a third removed): the
// synced file is kept whole, the unsynced one is rolled back where it is
// now, the removed one is nothing to undo.
func TestLoseUnsyncedFollowsRenames(t *testing.T) {
	f, backing, mnt := mount(t)
	write := func(name, s string, sync bool) {
		file, err := os.Create(filepath.Join(mnt, name))
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, file, s)
		if sync {
			if err := file.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := file.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rename := func(from, to string) {
		if err := os.Rename(filepath.Join(mnt, from), filepath.Join(mnt, to)); err != nil {
			t.Fatal(err)
		}
	}
	write("synced.tmp", "kept", true)
	rename("synced.tmp", "synced")
	write("unsynced.tmp", "lost", false)
	rename("unsynced.tmp", "unsynced")
	write("gone", "whatever", false)
	if err := os.Remove(filepath.Join(mnt, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := f.LoseUnsynced(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, filepath.Join(backing, "synced")); string(got) != "kept" {
		t.Errorf("synced file after the loss: %q, want %q", got, "kept")
	}
	if got := content(t, filepath.Join(backing, "unsynced")); len(got) != 0 {
		t.Errorf("unsynced renamed file after the loss: %q, want empty", got)
	}
}
