// Package faultfs mounts a pass-through FUSE filesystem over a backing
// directory for tests of what a process does when its disk fails: it can
// fail fsyncs or writes with EIO, and it forgets writes that were never
// synced, as the kernel and a power cut do.
//
// Every write to a file is applied to the backing file at once, and the
// bytes it overwrote are kept in the file's journal until the file is
// synced. A sync that succeeds clears the journal. A sync that fails
// (Fail(Fsync, ...)) first undoes the journal, so the backing file holds
// only what was synced before: that is what Linux does when writeback
// fails, where the dirty pages are dropped and marked clean, and a second
// fsync reports success with the data gone. LoseUnsynced undoes every
// journal, as a power cut would, for a process that was just killed.
//
// What it does not model: metadata (create, rename, unlink, truncate and
// fallocate) is applied and kept at once; a journal is kept per open file
// and follows it across renames.
//
// Mounting needs root (FUSE's direct mount, no fusermount) and /dev/fuse.
// It is used only by tests; the server never imports it.
package faultfs
