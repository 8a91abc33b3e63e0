package auth

import (
	"crypto/x509"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSatisfies(t *testing.T) {
	roles := []Role{Reader, Writer, Operator, Peer}
	want := map[[2]Role]bool{
		{Reader, Reader}: true, {Writer, Reader}: true, {Operator, Reader}: true,
		{Writer, Writer}: true, {Operator, Writer}: true,
		{Operator, Operator}: true,
		{Peer, Peer}:         true,
	}
	for _, have := range roles {
		for _, need := range roles {
			if got := have.Satisfies(need); got != want[[2]Role{have, need}] {
				t.Errorf("%s satisfies %s: %v", have, need, got)
			}
		}
	}
	if None.Satisfies(Reader) {
		t.Error("no role satisfies reader")
	}
}

func certWithURIs(uris ...string) *x509.Certificate {
	c := &x509.Certificate{}
	for _, u := range uris {
		p, _ := url.Parse(u)
		c.URIs = append(c.URIs, p)
	}
	return c
}

func TestRoleFromCert(t *testing.T) {
	for _, tc := range []struct {
		uris []string
		want Role
	}{
		{[]string{"metad://role/peer"}, Peer},
		{[]string{"spiffe://x/y", "metad://role/writer"}, Writer},
		{[]string{"metad://role/writer", "metad://role/writer"}, Writer},
		{[]string{"metad://role/reader", "metad://role/operator"}, None}, // ambiguous
		{[]string{"metad://role/root"}, None},
		{nil, None},
	} {
		if got := RoleFromCert(certWithURIs(tc.uris...)); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.uris, got, tc.want)
		}
	}
}

func writeTokens(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTokensYAMLAndJSONAndReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	writeTokens(t, path, "tokens:\n  - name: broker\n    sha256: "+HashToken("s3cret-broker")+"\n    role: writer\n")
	tok, err := LoadTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if name, role, ok := tok.Lookup("s3cret-broker"); !ok || name != "broker" || role != Writer {
		t.Fatalf("lookup: %q %s %v", name, role, ok)
	}
	if _, _, ok := tok.Lookup("wrong"); ok {
		t.Fatal("an unknown token was accepted")
	}
	// A broken file keeps the previous tokens.
	writeTokens(t, path, "tokens: [{name: x, sha256: nothex, role: writer}]")
	if _, err := tok.Reload(); err == nil || !strings.Contains(err.Error(), "tokens[0].sha256") {
		t.Fatalf("reload of a bad file: %v", err)
	}
	if _, _, ok := tok.Lookup("s3cret-broker"); !ok {
		t.Fatal("a failed reload dropped the previous tokens")
	}
	// JSON, and a rotation: the old token is gone, the new one works.
	writeTokens(t, path, `{"tokens":[{"name":"ops","sha256":"`+HashToken("new-token")+`","role":"operator"}]}`)
	if changed, err := tok.Reload(); err != nil || !changed {
		t.Fatalf("reload: %v %v", changed, err)
	}
	if _, _, ok := tok.Lookup("s3cret-broker"); ok {
		t.Error("a removed token still works")
	}
	if _, role, ok := tok.Lookup("new-token"); !ok || role != Operator {
		t.Error("the new token does not work")
	}
}

func TestTokensRefuseBadEntries(t *testing.T) {
	h := HashToken("x")
	for content, field := range map[string]string{
		"tokens: [{name: a, sha256: " + h + ", role: peer}]":                                               "tokens[0].role",
		"tokens: [{name: a, sha256: " + h + ", role: admin}]":                                              "tokens[0].role",
		"tokens: [{sha256: " + h + ", role: reader}]":                                                      "tokens[0].name",
		"tokens: [{name: a, sha256: " + h + ", role: reader}, {name: b, sha256: " + h + ", role: writer}]": "tokens[1]",
		"tokens: [{name: a, token: plaintext, role: reader}]":                                              "token",
	} {
		path := filepath.Join(t.TempDir(), "t.yaml")
		writeTokens(t, path, content)
		if _, err := LoadTokens(path, nil); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", content, err, field)
		}
	}
}
