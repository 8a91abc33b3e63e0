package node

import (
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/metad/metad/api"
)

// peerRefusals remembers which nodes refuse this node's peer secret, so
// that each refusal is logged when it starts (and again after the node
// answered in between), not on every reconcile probe. The node that
// refuses logs it too (api.Server), naming this node; without both, a node
// given another --peer-secret-file waited forever as one that "has not
// answered for its cluster id yet".
type peerRefusals struct {
	mu      sync.Mutex
	refused map[string]bool // by node id: its last answer was a refusal of the secret
}

// observe records the answer of node id at addr to a call (err nil: it
// answered) and logs a refusal of the peer secret that is new.
func (p *peerRefusals) observe(log *slog.Logger, id, addr string, err error) {
	refused := api.IsPeerSecretRefusal(err)
	p.mu.Lock()
	was := p.refused[id]
	switch {
	case refused:
		if p.refused == nil {
			p.refused = map[string]bool{}
		}
		p.refused[id] = true
	case err == nil:
		delete(p.refused, id)
	}
	p.mu.Unlock()
	if refused && !was {
		log.Error("peer secret mismatch: "+id+" refuses this node's peer secret; give every node the same --peer-secret-file",
			"server", id, "grpc", addr, "err", err)
	}
}

// describe says which nodes refuse this node's peer secret now, for a
// not-ready verdict ("" when none): a node that cannot be added because
// of it says so on /readyz, not only in its log.
func (p *peerRefusals) describe() string {
	p.mu.Lock()
	ids := make([]string, 0, len(p.refused))
	for id := range p.refused {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	if len(ids) == 0 {
		return ""
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ") + " refuse(s) this node's peer secret: give every node the same --peer-secret-file"
}
