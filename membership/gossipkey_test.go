package membership

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestGossipKeyOnOneNodeIsAWarning: a node joining a member whose gossip
// encryption differs from its own (a key on one side only, either way, or
// keys they do not share) logs the refusal at WARN, naming the gossip key
// setting, not at INFO like a member not up yet.
func TestGossipKeyOnOneNodeIsAWarning(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	keys := func(k ...[]byte) func(*Config) { return func(cfg *Config) { cfg.GossipKeys = k } }
	c := newCluster(t)
	c.start("keyed", 1, nil, keys(k1))
	c.start("plain", 0, c.joinAddrs("keyed"), nil)      // no key, joins a keyed member
	c.start("late", 0, c.joinAddrs("plain"), keys(k1))  // a key, joins a member without
	c.start("other", 0, c.joinAddrs("keyed"), keys(k2)) // another key
	for _, id := range []string{"plain", "late", "other"} {
		waitFor(t, 10*time.Second, id+" warns of the gossip keys", func() error {
			if c.sink.count("level=WARN", "gossip join refused", "--gossip-key-file", "node="+id) == 0 {
				return errors.New("not yet")
			}
			return nil
		})
	}
}
