package raftstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func validConfig() Config {
	c := DefaultConfig()
	c.NodeID, c.DataDir = "n1", "/tmp/x"
	return c
}

func TestDefaultConfigIsValid(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	err := Config{}.Validate()
	if err == nil {
		t.Fatal("zero Config accepted")
	}
	for _, field := range []string{"NodeID", "DataDir", "BindAddr", "HeartbeatTimeout", "ElectionTimeout",
		"LeaderLeaseTimeout", "CommitTimeout", "SnapshotInterval", "ApplyTimeout", "ReadRoundTimeout",
		"TransportTimeout", "LeadershipPollInterval", "MaxAppendEntries", "SnapshotRetain", "LogCacheSize",
		"MaxPendingProposals", "MaxReadsPerRound", "MaxWaitingReads", "TransportMaxPool", "StateCacheBytes",
		"SnapshotThreshold", "TrailingLogs"} {
		if !strings.Contains(err.Error(), "Config."+field+":") {
			t.Errorf("zero Config: no complaint about %s", field)
		}
	}
}

func TestValidateRanges(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Config)
		field  string
	}{
		"id with space":       {func(c *Config) { c.NodeID = "a b" }, "NodeID"},
		"id too long":         {func(c *Config) { c.NodeID = strings.Repeat("x", 129) }, "NodeID"},
		"bind without port":   {func(c *Config) { c.BindAddr = "localhost" }, "BindAddr"},
		"bind port too big":   {func(c *Config) { c.BindAddr = "127.0.0.1:70000" }, "BindAddr"},
		"advertise wildcard":  {func(c *Config) { c.AdvertiseAddr = "0.0.0.0:7421" }, "AdvertiseAddr"},
		"advertise port 0":    {func(c *Config) { c.AdvertiseAddr = "10.0.0.1:0" }, "AdvertiseAddr"},
		"election < hb":       {func(c *Config) { c.ElectionTimeout = c.HeartbeatTimeout / 2 }, "ElectionTimeout"},
		"lease > hb":          {func(c *Config) { c.LeaderLeaseTimeout = 2 * c.HeartbeatTimeout }, "LeaderLeaseTimeout"},
		"commit > hb":         {func(c *Config) { c.CommitTimeout = 2 * c.HeartbeatTimeout }, "CommitTimeout"},
		"append entries 2000": {func(c *Config) { c.MaxAppendEntries = 2000 }, "MaxAppendEntries"},
		"retain 0":            {func(c *Config) { c.SnapshotRetain = 0 }, "SnapshotRetain"},
		"waiting reads 0":     {func(c *Config) { c.MaxWaitingReads = 0 }, "MaxWaitingReads"},
	} {
		c := validConfig()
		tc.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "Config."+tc.field+":") {
			t.Errorf("%s: Validate() = %v, want a complaint about %s", name, err, tc.field)
		}
	}
	c := validConfig()
	c.AdvertiseAddr = "metad-1.example:7421"
	if err := c.Validate(); err != nil {
		t.Errorf("host name advertise address: %v", err)
	}
}

func TestRaftConfigMapsEveryField(t *testing.T) {
	c := validConfig()
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 301*time.Millisecond, 702*time.Millisecond, 203*time.Millisecond
	c.CommitTimeout, c.MaxAppendEntries = 7*time.Millisecond, 99
	c.SnapshotInterval, c.SnapshotThreshold, c.TrailingLogs = 11*time.Second, 1234, 4321
	logger := hclog.NewNullLogger()
	got := c.raftConfig(logger)
	want := raft.Config{
		ProtocolVersion: raft.ProtocolVersionMax, HeartbeatTimeout: 301 * time.Millisecond,
		ElectionTimeout: 702 * time.Millisecond, CommitTimeout: 7 * time.Millisecond, MaxAppendEntries: 99,
		BatchApplyCh: true, ShutdownOnRemove: false, TrailingLogs: 4321, SnapshotInterval: 11 * time.Second,
		SnapshotThreshold: 1234, LeaderLeaseTimeout: 203 * time.Millisecond, LocalID: "n1", Logger: logger,
		NoSnapshotRestoreOnStart: true, PreVoteDisabled: false, NoLegacyTelemetry: true,
	}
	if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", want) {
		t.Errorf("raftConfig =\n%+v\nwant\n%+v", *got, want)
	}
	if err := raft.ValidateConfig(got); err != nil {
		t.Errorf("raft refuses the mapped config: %v", err)
	}
}

func TestErrorClasses(t *testing.T) {
	nl := &NotLeaderError{LeaderID: "n2", LeaderAddr: "a:1"}
	wrapped := fmt.Errorf("api: %w", nl)
	if !errors.Is(wrapped, ErrNotLeader) || !Retryable(wrapped) || Indeterminate(wrapped) {
		t.Errorf("NotLeaderError classification")
	}
	var got *NotLeaderError
	if !errors.As(wrapped, &got) || got.LeaderID != "n2" {
		t.Errorf("errors.As lost the hint")
	}
	ind := fmt.Errorf("outer: %w", indeterminate(fmt.Errorf("%w: x", ErrLeadershipLost)))
	if !Indeterminate(ind) || !errors.Is(ind, ErrLeadershipLost) || !Retryable(ind) {
		t.Errorf("indeterminate classification: %v", ind)
	}
	for _, err := range []error{ErrAlreadyBootstrapped, ErrUnknownServer, errors.New("other")} {
		if Retryable(err) || Indeterminate(err) {
			t.Errorf("%v classified retryable or indeterminate", err)
		}
	}
}
