// Package ports hands out loopback ports for clusters of real metad
// processes (internal/proc for tests, jepsen/cluster for the harness).
// A metad node binds TCP (Raft, gRPC, HTTP) and UDP (gossip) on the ports
// it is given, so a port is only handed out if both are free.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
)

var (
	mu     sync.Mutex
	handed = map[int]bool{} // ports this process has handed out
)

// Free returns a loopback address with a port in [low, high) that is free
// for TCP and UDP right now and that this process has not handed out
// before. Callers choose ranges below the kernel's ephemeral range
// (32768 and up), so no outgoing connection or ":0" listener can take the
// port while its node is down.
func Free(low, high int) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		port := low + rand.IntN(high-low)
		if handed[port] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		tl, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ul, err := net.ListenPacket("udp", addr)
		tl.Close()
		if err != nil {
			continue
		}
		ul.Close()
		handed[port] = true
		return addr, nil
	}
	return "", fmt.Errorf("no free port in [%d, %d)", low, high)
}
