package fsm

import (
	"crypto/sha256"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// dedupEntry remembers the result of one request id, so that a client
// retrying after an indeterminate failure gets the first answer instead of
// applying the command twice.
type dedupEntry struct {
	requestID string
	digest    []byte // commandDigest of the first command with this id
	at        int64  // machine time it was applied
	result    *fsmpb.Result
}

func dedupLess(a, b dedupEntry) bool { return a.requestID < b.requestID }

// dedupDeadline orders dedup entries by age for eviction: by machine time,
// then by the index the command was applied at (its result's version), so
// that entries applied at the same machine time still leave oldest first.
type dedupDeadline struct {
	at        int64
	version   uint64
	requestID string
}

func dedupDeadlineLess(a, b dedupDeadline) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.version != b.version {
		return a.version < b.version
	}
	return a.requestID < b.requestID
}

// commandDigest identifies what a command asks for, without its request id
// and stamp, so that a retry with the same id is recognised and a different
// command reusing the id is refused.
func commandDigest(cmd *fsmpb.Command) []byte {
	c := &fsmpb.Command{Op: cmd.Op}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		// The command was decoded from, or is about to become, these bytes.
		panic("fsm: marshal command for digest: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// remember stores res for requestID. It keeps its own copy: the caller owns
// the result Apply returns and may change it.
func (m *Machine) remember(requestID string, digest []byte, res *fsmpb.Result) {
	res = cloneResult(res)
	m.putDedup(dedupEntry{requestID: requestID, digest: digest, at: m.clock, result: res})
	m.dedupAge.ReplaceOrInsert(dedupDeadline{at: m.clock, version: res.Version, requestID: requestID})
	for m.dedup.Len() > MaxDedupEntries {
		m.evictOldestDedup()
	}
}

// pruneDedup forgets request ids older than DedupTTL in machine time.
func (m *Machine) pruneDedup() {
	for {
		d, ok := m.dedupAge.Min()
		if !ok || addSaturated(d.at, int64(DedupTTL)) > m.clock {
			return
		}
		m.evictOldestDedup()
	}
}

func (m *Machine) evictOldestDedup() {
	d, ok := m.dedupAge.DeleteMin()
	if ok {
		m.dropDedup(dedupEntry{requestID: d.requestID})
	}
}

// cloneResult copies a Result field by field: proto.Clone, by reflection,
// was a third of the cost of remembering a request id on every write.
// TestCloneResultCopiesEveryField keeps it complete as fields are added.
func cloneResult(r *fsmpb.Result) *fsmpb.Result {
	c := &fsmpb.Result{
		Version: r.Version, StreamId: r.StreamId, WriterEpoch: r.WriterEpoch, CommittedEnd: r.CommittedEnd,
		Trim: r.Trim, Generation: r.Generation, PinId: r.PinId, PinExpiryUnixNano: r.PinExpiryUnixNano,
		Quarantined: r.Quarantined, Deduplicated: r.Deduplicated,
	}
	if rej := r.Rejection; rej != nil {
		c.Rejection = &fsmpb.Rejection{Code: rej.Code, Field: rej.Field, Message: rej.Message}
	}
	if len(r.AppendRejections) > 0 {
		c.AppendRejections = make([]*fsmpb.AppendRejection, len(r.AppendRejections))
		for i, a := range r.AppendRejections {
			c.AppendRejections[i] = &fsmpb.AppendRejection{
				Index: a.Index, StreamId: a.StreamId, CommittedEnd: a.CommittedEnd, WriterEpoch: a.WriterEpoch,
				Rejection: &fsmpb.Rejection{Code: a.Rejection.Code, Field: a.Rejection.Field, Message: a.Rejection.Message},
			}
		}
	}
	return c
}
