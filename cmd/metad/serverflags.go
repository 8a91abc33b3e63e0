package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// checkFlags checks the settings whose limits depend on each other before
// the packages' Validate does: their messages name the package's field
// (raftstore: Config.LeaderLeaseTimeout ... [5ms, 0s]), while an operator
// set a flag, so the flag is what gets named here.
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
	return append(errs, checkRaftTimings(fs, f.cfg.Raft.HeartbeatTimeout, f.cfg.Raft.ElectionTimeout, f.cfg.Raft.LeaderLeaseTimeout)...)
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
