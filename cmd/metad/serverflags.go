package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/metad/metad/node"
	"github.com/metad/metad/raftstore"
)

// checkFlags checks the settings cmd/metad owns (logging) and those whose
// package Validate would name a field rather than the flag.
func (f *serverFlags) checkFlags(fs *pflag.FlagSet) []error {
	var errs []error
	if _, err := parseLevel(f.logLevel); err != nil {
		errs = append(errs, err)
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		errs = append(errs, fmt.Errorf("log-format %q: want text or json", f.logFormat))
	}
	if n := f.cfg.Membership.BootstrapExpect; n < 0 || n > 9 {
		errs = append(errs, fmt.Errorf("bootstrap-expect %d: want 0 (join an existing cluster) to 9", n))
	}
	return errs
}

// validateNode runs the packages' Validate over c, after the raft log store
// and timings were checked by flag: the timings bound each other, and raftstore's
// messages name its fields with derived ranges ("LeaderLeaseTimeout ...
// [5ms, 0s]" after --raft-heartbeat-timeout 0s), so when the flags are at
// fault the package sees its defaults instead and only the flag messages
// are reported.
func validateNode(fs *pflag.FlagSet, c node.Config) []error {
	var errs []error
	if !c.Raft.LogStore.Valid() {
		errs = append(errs, fmt.Errorf("--raft-log-store %q: want %s, %s or %s", c.Raft.LogStore, raftstore.LogStoreAuto, raftstore.LogStoreBolt, raftstore.LogStoreWAL))
		c.Raft.LogStore = raftstore.DefaultConfig().LogStore
	}
	if timings := checkRaftTimings(fs, c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout, c.Raft.LeaderLeaseTimeout); len(timings) > 0 {
		errs = append(errs, timings...)
		d := raftstore.DefaultConfig()
		c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout = d.HeartbeatTimeout, d.ElectionTimeout
		c.Raft.LeaderLeaseTimeout, c.Raft.CommitTimeout = d.LeaderLeaseTimeout, d.CommitTimeout
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// checkRaftTimings: the heartbeat timeout bounds the others, so when it is
// itself out of range only it is reported.
func checkRaftTimings(fs *pflag.FlagSet, heartbeat, election, lease time.Duration) []error {
	flag := func(name string, v time.Duration) string {
		s := fmt.Sprintf("--%s %v", name, v)
		if !fs.Changed(name) {
			s += " (the default)"
		}
		return s
	}
	hb, el, ll := flag("raft-heartbeat-timeout", heartbeat), flag("raft-election-timeout", election), flag("raft-leader-lease-timeout", lease)
	if heartbeat < 10*time.Millisecond || heartbeat > time.Minute {
		return []error{fmt.Errorf("%s: want 10ms to 1m", hb)}
	}
	var errs []error
	switch {
	case election < heartbeat:
		errs = append(errs, fmt.Errorf("%s is below %s: want at least the heartbeat timeout", el, hb))
	case election > time.Minute:
		errs = append(errs, fmt.Errorf("%s: want at most 1m", el))
	}
	switch {
	case lease < 5*time.Millisecond:
		errs = append(errs, fmt.Errorf("%s: want at least 5ms", ll))
	case lease > heartbeat:
		errs = append(errs, fmt.Errorf("%s exceeds %s: want at most the heartbeat timeout", ll, hb))
	}
	return errs
}

// refusedStart turns a data dir that holds its raft log in another log
// store than --raft-log-store into bad usage (exit 2) with one line saying
// what to do; other start errors pass as they are.
func refusedStart(err error) error {
	if errors.Is(err, node.ErrBadSetting) {
		return usageError{err}
	}
	var mm *raftstore.LogStoreMismatchError
	if !errors.As(err, &mm) {
		return err
	}
	return usageError{fmt.Errorf("--raft-log-store %s: data dir %s holds a %s raft log, which is never converted in place; start with --raft-log-store %s, or switch this node by deleting its data dir and starting it with the same --node-id and --join, so that it rejoins as a new incarnation (README \"Raft log store\")",
		mm.Wants, mm.Dir, mm.Has, mm.Has)}
}
