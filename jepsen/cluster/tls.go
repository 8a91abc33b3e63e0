package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/metad/metad/client"
	"github.com/metad/metad/tlsconfig"
)

// setupTLS makes a CA, one server certificate per node (role peer, valid
// for 127.0.0.1) and the harness's operator certificate, in Dir/tls.
func (c *Cluster) setupTLS() error {
	dir := c.tlsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := tlsconfig.CreateCA("jepsen CA", 24*time.Hour)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.CertPEM, 0o600); err != nil {
		return err
	}
	issue := func(name string, spec tlsconfig.LeafSpec) error {
		kp, err := tlsconfig.CreateCert(ca, spec)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".pem"), kp.CertPEM, 0o600); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+"-key.pem"), kp.KeyPEM, 0o600)
	}
	for _, n := range c.Nodes {
		if err := issue(n.ID, tlsconfig.LeafSpec{Name: n.ID, Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}); err != nil {
			return err
		}
	}
	return issue("jepsen", tlsconfig.LeafSpec{Name: "jepsen", Role: "operator"})
}

func (c *Cluster) tlsDir() string { return filepath.Join(c.cfg.Dir, "tls") }

// tlsArgs are node n's TLS flags (none without TLS).
func (c *Cluster) tlsArgs(n *Node) []string {
	if !c.cfg.TLS {
		return nil
	}
	d := c.tlsDir()
	return []string{"--tls-cert-file", filepath.Join(d, n.ID+".pem"), "--tls-key-file", filepath.Join(d, n.ID+"-key.pem"),
		"--tls-ca-file", filepath.Join(d, "ca.pem")}
}

// ClientConfig is how the harness's clients reach addrs: over the network
// only, with TLS and the harness's operator certificate when TLS is on.
func (c *Cluster) ClientConfig(addrs []string) client.Config {
	cfg := client.Config{Addrs: addrs, Timeout: 5 * time.Second, Holder: "jepsen"}
	if c.cfg.TLS {
		d := c.tlsDir()
		cfg.TLS = &client.TLS{CAFile: filepath.Join(d, "ca.pem"), CertFile: filepath.Join(d, "jepsen.pem"), KeyFile: filepath.Join(d, "jepsen-key.pem")}
	}
	return cfg
}

// adminScheme is the HTTP admin address's scheme: https with TLS.
func (c *Cluster) adminScheme() string {
	if c.cfg.TLS {
		return "https"
	}
	return "http"
}

// adminClient reaches the HTTP admin addresses, trusting the harness's CA
// and presenting its certificate when TLS is on.
func (c *Cluster) adminClient() (*http.Client, error) {
	if !c.cfg.TLS {
		return http.DefaultClient, nil
	}
	d := c.tlsDir()
	caPEM, err := os.ReadFile(filepath.Join(d, "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cluster: no certificate in %s", filepath.Join(d, "ca.pem"))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(d, "jepsen.pem"), filepath.Join(d, "jepsen-key.pem"))
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}, nil
}
