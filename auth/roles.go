package auth

import (
	"crypto/x509"
	"fmt"
	"strings"
)

// Role is what a caller may do.
type Role int

// The roles, weakest first. Reader ⊂ Writer ⊂ Operator; Peer is apart.
const (
	None Role = iota
	Reader
	Writer
	Operator
	Peer
)

var roleNames = map[Role]string{None: "none", Reader: "reader", Writer: "writer", Operator: "operator", Peer: "peer"}

func (r Role) String() string {
	if s, ok := roleNames[r]; ok {
		return s
	}
	return fmt.Sprintf("role(%d)", int(r))
}

// ParseRole parses a role name.
func ParseRole(s string) (Role, error) {
	for r, name := range roleNames {
		if r != None && name == s {
			return r, nil
		}
	}
	return None, fmt.Errorf("role %q: want reader, writer, operator or peer", s)
}

// Satisfies reports whether a caller with role have may make a call that
// needs role need. The client roles nest; peer satisfies only peer.
func (r Role) Satisfies(need Role) bool {
	have := r
	if need == None {
		return true
	}
	if need == Peer || have == Peer {
		return have == need
	}
	return have >= need
}

// RoleURIPrefix is the URI SAN prefix that carries a certificate's role
// (tlsconfig.RoleURI makes it).
const RoleURIPrefix = "metad://role/"

// RoleFromCert returns the role a verified certificate carries. A
// certificate with no role URI, or with two different ones, has none.
func RoleFromCert(c *x509.Certificate) Role {
	found := None
	for _, u := range c.URIs {
		name, ok := strings.CutPrefix(u.String(), RoleURIPrefix)
		if !ok {
			continue
		}
		r, err := ParseRole(name)
		if err != nil || (found != None && found != r) {
			return None
		}
		found = r
	}
	return found
}
