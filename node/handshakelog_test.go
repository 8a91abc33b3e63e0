package node

import (
	"fmt"
	"io"
	"testing"
)

// A connection closed before any TLS record (a TCP probe) is not a
// refusal worth a WARN.
func TestHandshakeRefusalIgnoresProbes(t *testing.T) {
	if why := handshakeRefusal(fmt.Errorf("read: %w", io.EOF)); why != "" {
		t.Errorf("EOF: %q, want nothing to report", why)
	}
	if why := handshakeRefusal(io.ErrUnexpectedEOF); why == "" {
		t.Error("a handshake cut short is a refusal")
	}
}
