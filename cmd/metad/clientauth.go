package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/metad/metad/client"
)

// clientAuth are the client commands' TLS and token flags, each with its
// environment variable (METAD_TLS_CERT_FILE, ..., METAD_TOKEN).
type clientAuth struct {
	certFile, keyFile, caFile string
	token                     string
}

func (a *clientAuth) register(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	fs.StringVar(&a.certFile, "tls-cert-file", os.Getenv("METAD_TLS_CERT_FILE"), "PEM client certificate (metad tls cert create --role client) (env METAD_TLS_CERT_FILE)")
	fs.StringVar(&a.keyFile, "tls-key-file", os.Getenv("METAD_TLS_KEY_FILE"), "PEM key of --tls-cert-file (env METAD_TLS_KEY_FILE)")
	fs.StringVar(&a.caFile, "tls-ca-file", os.Getenv("METAD_TLS_CA_FILE"), "PEM CA bundle the servers' certificates chain to; turns TLS on (env METAD_TLS_CA_FILE)")
	fs.StringVar(&a.token, "token", os.Getenv("METAD_TOKEN"), "bearer token (env METAD_TOKEN; prefer the environment: flags show in ps)")
}

// config is the client configuration for addrs with these credentials.
// TLS is on when a CA bundle is given.
func (a *clientAuth) config(addrs string) client.Config {
	c := client.Config{Addrs: strings.Split(addrs, ","), Token: a.token}
	if a.caFile != "" || a.certFile != "" {
		c.TLS = &client.TLS{CAFile: a.caFile, CertFile: a.certFile, KeyFile: a.keyFile}
	}
	return c
}
