package cliflags

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestCheckAddrsNamesTheFlagAndIsUsage(t *testing.T) {
	if err := CheckAddrs("--addr", "127.0.0.1:1,localhost:65535"); err != nil {
		t.Fatalf("good list refused: %v", err)
	}
	for _, bad := range []string{"127.0.0.1", "h:0", "h:65536", "a:1,b"} {
		err := CheckAddrs("--addr", bad)
		if err == nil || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--addr") {
			t.Errorf("%q: got %v, want a usage error naming --addr", bad, err)
		}
	}
}

func TestAuthConfigTurnsTLSOnWithACAOrCertificate(t *testing.T) {
	plain := (&Auth{Token: "t"}).Config("a:1,b:2")
	if plain.TLS != nil || plain.Token != "t" || len(plain.Addrs) != 2 {
		t.Errorf("plain: %+v", plain)
	}
	withCA := (&Auth{CAFile: "ca.pem"}).Config("a:1")
	if withCA.TLS == nil || withCA.TLS.CAFile != "ca.pem" {
		t.Errorf("with a CA: %+v", withCA)
	}
}

// The flags parse into the object store's Config; a mistyped directory,
// both spellings at once and an invalid URL are refused as bad usage.
func TestClientObjectStoreFlags(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		ok   bool
	}{
		{[]string{"--object-dir", dir}, true},
		{[]string{"--object-store", "file://" + dir}, true},
		{[]string{"--object-dir", filepath.Join(dir, "missing")}, false},
		{[]string{"--object-store", "file://" + dir, "--object-dir", dir}, false},
		{[]string{"--object-store", "ftp://x"}, false},
	}
	for _, c := range cases {
		var o ClientObjectStore
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.Register(fs, "", "dir")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if !o.Named() {
			t.Errorf("%v: no store named", c.args)
		}
		_, err := o.Open(context.Background(), fs)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrUsage)) {
			t.Errorf("%v: got %v, want ok=%v (else a usage error)", c.args, err, c.ok)
		}
	}
	var none ClientObjectStore
	none.Register(pflag.NewFlagSet("t", pflag.ContinueOnError), "", "dir")
	if none.Named() {
		t.Error("no flags, empty default: a store is named")
	}
}
