package membership

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	c := DefaultConfig()
	c.NodeID = "n1"
	return c
}

func TestDefaultConfigValid(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("default config with a node id: %v", err)
	}
	if err := DefaultConfig().Validate(); err == nil {
		t.Fatal("default config without node id validated")
	}
}

// TestValidateReportsEveryProblem breaks many fields at once and checks
// each is named, and that every error wraps ErrInvalidConfig.
func TestValidateReportsEveryProblem(t *testing.T) {
	c := validConfig()
	c.NodeID = "bad id!"
	c.BindAddr = "0.0.0.0:7422" // unspecified without AdvertiseAddr
	c.RaftAddr = "nohostport"
	c.GRPCAddr = "127.0.0.1:0"
	c.Join = []string{"127.0.0.1:1", "x"}
	c.BootstrapExpect = MaxBootstrapExpect + 1
	c.MinQuorum = -1
	c.DeadServerTimeout = 0
	c.LeftServerTimeout = 721 * time.Hour
	c.ReconcileInterval = time.Hour
	c.JoinRetryMin = time.Second
	c.JoinRetryMax = time.Millisecond
	c.ProbeTimeout = 2 * c.ProbeInterval
	c.SuspicionMult = 0
	c.MaxTrailingLogs = 2e9
	err := c.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
	}
	for _, want := range []string{"NodeID", "AdvertiseAddr: required", "RaftAddr", "GRPCAddr", "Join[1]",
		"BootstrapExpect", "MinQuorum", "DeadServerTimeout", "LeftServerTimeout", "ReconcileInterval", "JoinRetryMax",
		"ProbeTimeout", "SuspicionMult", "MaxTrailingLogs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "Join[0]") {
		t.Errorf("valid Join[0] reported: %v", err)
	}
}

func TestValidateAdvertise(t *testing.T) {
	c := validConfig()
	c.BindAddr = "0.0.0.0:7422"
	c.AdvertiseAddr = "10.0.0.1:7422"
	if err := c.Validate(); err != nil {
		t.Fatalf("bind any + advertise IP: %v", err)
	}
	c.AdvertiseAddr = "host.example:7422"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "IP literal") {
		t.Fatalf("hostname advertise: %v", err)
	}
}

func TestValidateID(t *testing.T) {
	for id, ok := range map[string]bool{
		"n1": true, "metad-0.east_2": true, "": false, "a b": false, "é": false,
		strings.Repeat("x", MaxIDLen): true, strings.Repeat("x", MaxIDLen+1): false,
	} {
		if err := validateID(id); (err == nil) != ok {
			t.Errorf("validateID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}

func TestWithoutSelf(t *testing.T) {
	got := withoutSelf([]string{"a:1", "b:2", "c:3"}, "b:2", "z:9")
	if strings.Join(got, ",") != "a:1,c:3" {
		t.Fatalf("got %v", got)
	}
}
