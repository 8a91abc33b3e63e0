package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/metad/metad/auth"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/node"
	"github.com/metad/metad/tlsconfig"
)

// Files `metad tls ca create` writes; `metad tls cert create` signs with
// them by default.
const (
	caCertName = "metad-ca.pem"
	caKeyName  = "metad-ca-key.pem"
)

func newTLSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tls",
		Short: "Create a CA and certificates for a development cluster",
		Long: `Create a CA and certificates for a development or test cluster, like
consul tls: metad tls ca create, then metad tls cert create for each server
and client. Files are written to --out-dir (default: the current directory),
keys with mode 0600; an existing file is never overwritten.

For production use your own PKI: a server certificate must carry the URI SAN
metad://role/peer and both serverAuth and clientAuth key usages; a client
certificate the URI SAN metad://role/reader, writer or operator.`,
	}
	ca := &cobra.Command{Use: "ca", Short: "Manage the CA"}
	ca.AddCommand(newTLSCACreateCmd())
	cert := &cobra.Command{Use: "cert", Short: "Manage certificates"}
	cert.AddCommand(newTLSCertCreateCmd())
	gossip := &cobra.Command{Use: "gossip-key", Short: "Manage gossip encryption keys"}
	gossip.AddCommand(newGossipKeyCreateCmd())
	cmd.AddCommand(ca, cert, gossip)
	return cmd
}

// newGossipKeyCreateCmd prints a new gossip key (like consul keygen).
func newGossipKeyCreateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "create",
		Short: "Print a new random gossip encryption key (32 bytes, base64) for --gossip-key-file",
		Long: `Print a new random gossip encryption key: 32 bytes, base64. Put it in the
file every server's --gossip-key-file names (the same file on every node). To
rotate: add the new key as the second line on every node, then move it to the
first line on every node, then remove the old one; each server re-reads the
file when it changes or on SIGHUP.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), node.NewGossipKey())
			return err
		},
	}
}

func newTLSCACreateCmd() *cobra.Command {
	var outDir, name string
	var days int
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a CA: " + caCertName + " and " + caKeyName,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days < 1 {
				return usageError{fmt.Errorf("--days %d: want at least 1", days)}
			}
			kp, err := tlsconfig.CreateCA(name, time.Duration(days)*24*time.Hour)
			if err != nil {
				return err
			}
			return writePair(cmd.OutOrStdout(), outDir, caCertName, caKeyName, kp)
		},
	}
	cmd.Flags().StringVar(&outDir, "out-dir", ".", "directory to write the files to")
	cmd.Flags().StringVar(&name, "name", "metad CA", "the CA's common name")
	cmd.Flags().IntVar(&days, "days", 1825, "validity in days")
	return cmd
}

func newTLSCertCreateCmd() *cobra.Command {
	var outDir, name, role, clientRole, caFile, caKeyFile string
	var ips, dns []string
	var days int
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a certificate signed by the CA: NAME.pem and NAME-key.pem",
		Long: `Create a certificate signed by the CA.

  --role server   a metad node's certificate: it serves clients with it and
                  it is the node's identity towards other nodes (role peer;
                  serverAuth and clientAuth). localhost and 127.0.0.1 are
                  always in it; add the node's addresses with --ip/--dns.
  --role client   a client's certificate, with the role --client-role
                  (default operator, like consul tls cert create -client).
  --role peer     a peer identity that only calls (role peer, clientAuth):
                  for a tool that must call the node-to-node service.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := certSpec(name, role, clientRole, ips, dns, days)
			if err != nil {
				return usageError{err}
			}
			ca, err := readCA(outDir, caFile, caKeyFile)
			if err != nil {
				return err
			}
			kp, err := tlsconfig.CreateCert(ca, spec)
			if err != nil {
				return err
			}
			return writePair(cmd.OutOrStdout(), outDir, name+".pem", name+"-key.pem", kp)
		},
	}
	f := cmd.Flags()
	f.StringVar(&outDir, "out-dir", ".", "directory to write the files to (and to find the CA in)")
	f.StringVar(&name, "name", "", "the certificate's common name and file name (required)")
	f.StringVar(&role, "role", "", "server, client or peer (required)")
	f.StringVar(&clientRole, "client-role", "operator", "with --role client: reader, writer or operator")
	f.StringSliceVar(&ips, "ip", nil, "IP address SAN (repeatable)")
	f.StringSliceVar(&dns, "dns", nil, "DNS name SAN (repeatable)")
	f.IntVar(&days, "days", 365, "validity in days")
	f.StringVar(&caFile, "ca", "", "CA certificate (default <out-dir>/"+caCertName+")")
	f.StringVar(&caKeyFile, "ca-key", "", "CA key (default <out-dir>/"+caKeyName+")")
	return cmd
}

// certSpec checks the flags and turns them into what to create.
func certSpec(name, role, clientRole string, ips, dns []string, days int) (tlsconfig.LeafSpec, error) {
	spec := tlsconfig.LeafSpec{Name: name, DNS: dns, NotAfter: clock.Real.Now().Add(time.Duration(days) * 24 * time.Hour)}
	var errs []error
	if name == "" || filepath.Base(name) != name {
		errs = append(errs, fmt.Errorf("--name %q: required, and a plain file name", name))
	}
	if days < 1 {
		errs = append(errs, fmt.Errorf("--days %d: want at least 1", days))
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			errs = append(errs, fmt.Errorf("--ip %q: not an IP address", s))
		}
		spec.IPs = append(spec.IPs, ip)
	}
	switch role {
	case "server":
		spec.Role, spec.Server = auth.Peer.String(), true
		spec.IPs = append(spec.IPs, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
		spec.DNS = append(spec.DNS, "localhost")
	case "peer":
		spec.Role = auth.Peer.String()
	case "client":
		r, err := auth.ParseRole(clientRole)
		if err != nil || r == auth.Peer {
			errs = append(errs, fmt.Errorf("--client-role %q: want reader, writer or operator", clientRole))
		}
		spec.Role = clientRole
	default:
		errs = append(errs, fmt.Errorf("--role %q: want server, client or peer", role))
	}
	return spec, errors.Join(errs...)
}

func readCA(outDir, certFile, keyFile string) (*tlsconfig.KeyPair, error) {
	if certFile == "" {
		certFile = filepath.Join(outDir, caCertName)
	}
	if keyFile == "" {
		keyFile = filepath.Join(outDir, caKeyName)
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, usageError{fmt.Errorf("--ca: %w (metad tls ca create makes one)", err)}
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, usageError{fmt.Errorf("--ca-key: %w", err)}
	}
	kp, err := tlsconfig.ParseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, usageError{fmt.Errorf("--ca/--ca-key: %w", err)}
	}
	return kp, nil
}

// writePair writes the certificate (0644) and key (0600), refusing to
// overwrite either.
func writePair(out io.Writer, dir, certName, keyName string, kp *tlsconfig.KeyPair) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageError{fmt.Errorf("--out-dir %s: not a directory (create it first)", dir)}
	}
	certPath, keyPath := filepath.Join(dir, certName), filepath.Join(dir, keyName)
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Stat(p); err == nil {
			return usageError{fmt.Errorf("%s exists: refusing to overwrite it", p)}
		}
	}
	if err := writeNew(keyPath, kp.KeyPEM, 0o600); err != nil {
		return err
	}
	if err := writeNew(certPath, kp.CertPEM, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "==> wrote %s\n==> wrote %s\n", certPath, keyPath)
	return nil
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
