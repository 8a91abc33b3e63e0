package membership

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"
)

// runJoiner is the joiner goroutine. It joins the configured addresses,
// retrying with backoff until one answers (so nodes may start in any
// order), then every ReconnectInterval tries to rejoin members it sees as
// dead, and the Join addresses when it is alone. memberlist alone never
// re-contacts a node once it has stopped gossiping to the dead, so without
// this a partition longer than that would never heal (serf's reconnect
// loop exists for the same reason).
func (a *Agent) runJoiner(ctx context.Context) {
	if len(a.joinAddrs) > 0 {
		a.joinWithBackoff(ctx)
	}
	tick := a.clock.NewTimer(a.cfg.ReconnectInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			a.reconnect()
			tick.Reset(a.cfg.ReconnectInterval)
		}
	}
}

func (a *Agent) joinWithBackoff(ctx context.Context) {
	delay := a.cfg.JoinRetryMin
	for attempt := 1; ; attempt++ {
		if a.left.Load() {
			return
		}
		n, err := a.ml.Join(a.joinAddrs)
		if n > 0 {
			a.log.Info("joined gossip", "contacted", n, "attempt", attempt)
			return
		}
		if gossipKeysDiffer(err) {
			// No retry mends it, and the member refusing us logs it as
			// its own: this side must say so as loudly.
			a.log.Warn("gossip join refused: this node and the member it joins do not encrypt gossip alike (a gossip key on one of them only, or keys they do not share: --gossip-key-file); retrying in the background",
				"join", a.joinAddrs, "attempt", attempt, "err", err)
		} else if attempt == 1 {
			a.log.Info("gossip join failed; retrying in the background", "join", a.joinAddrs, "err", err)
		} else {
			a.log.Debug("gossip join failed", "attempt", attempt, "err", err)
		}
		wait := a.clock.NewTimer(jitter(delay))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C():
		}
		delay = min(2*delay, a.cfg.JoinRetryMax)
	}
}

// jitter spreads d over [0.8d, 1.2d) so restarted nodes do not retry in step.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func (a *Agent) reconnect() {
	if a.left.Load() {
		return
	}
	var targets []string
	alive := 0
	for _, m := range a.table.snapshot() {
		switch {
		case m.ID == a.cfg.NodeID:
		case m.Status == StatusAlive:
			alive++
		case m.Status == StatusDead:
			targets = append(targets, m.GossipAddr)
		}
	}
	if alive == 0 {
		targets = append(targets, a.joinAddrs...)
	}
	if len(targets) == 0 {
		return
	}
	n, err := a.ml.Join(targets)
	a.log.Debug("gossip reconnect attempt", "targets", targets, "contacted", n, "err", err)
}

// keyMismatches are memberlist's errors for gossip encrypted on one side
// only, or under keys the other side lacks. memberlist has no sentinels
// for them, so its texts are matched: this package is memberlist's only
// user, and TestGossipKeyOnOneNodeIsAWarning fails if a new release
// rewords them.
var keyMismatches = []string{
	"remote state is encrypted and encryption is not configured",
	"encryption is configured but remote state is not encrypted",
	"no installed keys could decrypt the message",
}

// gossipKeysDiffer reports whether a join failed because the two sides'
// gossip keys differ.
func gossipKeysDiffer(err error) bool {
	if err == nil {
		return false
	}
	for _, m := range keyMismatches {
		if strings.Contains(err.Error(), m) {
			return true
		}
	}
	return false
}
