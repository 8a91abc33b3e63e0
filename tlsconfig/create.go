package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"time"

	"github.com/metad/metad/clock"
)

// KeyPair is a certificate and its private key, PEM-encoded.
type KeyPair struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
	key             *ecdsa.PrivateKey
}

// CreateCA makes a self-signed CA valid from now-1h for validity.
func CreateCA(name string, validity time.Duration) (*KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name, Organization: []string{"metad"}},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	return sign(tmpl, nil, clock.Real.Now().Add(-time.Hour), clock.Real.Now().Add(validity))
}

// LeafSpec describes a certificate CreateCert makes.
type LeafSpec struct {
	Name string
	// Role is put in the certificate as the URI SAN RoleURI(Role).
	Role string
	// Server adds the serverAuth key usage (clientAuth is always there).
	Server bool
	IPs    []net.IP
	DNS    []string
	// NotBefore and NotAfter bound validity (tests make expired ones).
	NotBefore, NotAfter time.Time
}

// RoleURIPrefix is the URI SAN prefix that carries a role:
// metad://role/peer, metad://role/operator, ...
const RoleURIPrefix = "metad://role/"

// RoleURI is the URI SAN naming role.
func RoleURI(role string) *url.URL {
	return &url.URL{Scheme: "metad", Host: "role", Path: "/" + role}
}

// CreateCert makes a leaf certificate signed by ca.
func CreateCert(ca *KeyPair, spec LeafSpec) (*KeyPair, error) {
	if ca == nil || ca.key == nil {
		return nil, errors.New("tlsconfig: CreateCert needs a CA with its key")
	}
	if spec.Name == "" || spec.Role == "" {
		return nil, errors.New("tlsconfig: a certificate needs a name and a role")
	}
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if spec.Server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: spec.Name, Organization: []string{"metad"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: usages,
		IPAddresses: spec.IPs,
		DNSNames:    spec.DNS,
		URIs:        []*url.URL{RoleURI(spec.Role)},
	}
	nb, na := spec.NotBefore, spec.NotAfter
	if nb.IsZero() {
		nb = clock.Real.Now().Add(-time.Hour)
	}
	if na.IsZero() {
		na = clock.Real.Now().Add(365 * 24 * time.Hour)
	}
	return sign(tmpl, ca, nb, na)
}

// ParseKeyPair reads a certificate and key made by this package (or any
// ECDSA pair), e.g. a CA to sign with.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("%w: not PEM", ErrInvalid)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: key: %w (want an EC key)", ErrInvalid, err)
	}
	return &KeyPair{CertPEM: certPEM, KeyPEM: keyPEM, Cert: cert, key: key}, nil
}

func sign(tmpl *x509.Certificate, ca *KeyPair, notBefore, notAfter time.Time) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, notBefore, notAfter
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.Cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		Cert:    cert, key: key,
	}, nil
}
