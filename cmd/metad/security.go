package main

import (
	"time"

	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/metad/metad/node"
)

// registerSecurityFlags binds the server's TLS and authentication flags
// (README "Securing a cluster").
func registerSecurityFlags(fs *pflag.FlagSet, s *node.Security) {
	fs.StringVar(&s.TLS.CertFile, "tls-cert-file", "", "PEM certificate this server serves with and presents to peers (role peer: metad tls cert create --role server)")
	fs.StringVar(&s.TLS.KeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&s.TLS.CAFile, "tls-ca-file", "", "PEM CA bundle that client and peer certificates must chain to")
	fs.StringVar(&s.AuthTokensFile, "auth-tokens-file", "", "YAML or JSON file of bearer tokens' SHA-256 hashes with names and roles (reloaded on change)")
	fs.StringVar(&s.PeerSecretFile, "peer-secret-file", "", "without TLS: a secret shared by every node of the cluster, which only nodes may use to call each other")
	fs.StringVar(&s.GossipKeyFile, "gossip-key-file", "", "file of base64 gossip encryption keys, one a line, the first used to encrypt (metad tls gossip-key create; reloaded on change)")
	fs.BoolVar(&s.Insecure, "insecure", false, "allow non-loopback addresses without TLS (clear text, no client authentication)")
	fs.DurationVar(&s.ReloadInterval, "tls-reload-interval", 10*time.Second, "how often the TLS files, the tokens file and the gossip key file are checked for changes (SIGHUP reloads at once)")
}

// warnInsecure says loudly that a server reachable from the network runs
// without TLS.
func warnInsecure(log *slog.Logger, cfg node.Config) {
	if cfg.Security.Insecure && !cfg.Security.TLS.Enabled() {
		log.Warn("--insecure: serving in clear text without client authentication; anyone who reaches these ports can read and change the cluster's state")
	}
}

// catchSIGHUP starts catching SIGHUP before the node starts, so that a
// reload asked for while it starts (systemctl reload) does not kill it;
// reloadOnSIGHUP then serves the signals.
func catchSIGHUP() chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup
}

// reloadOnSIGHUP re-reads the certificates and tokens on every SIGHUP
// until ctx ends.
func reloadOnSIGHUP(ctx context.Context, hup chan os.Signal, n *node.Server) {
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				n.Reload()
			}
		}
	}()
}
