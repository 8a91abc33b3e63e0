package fsm

import (
	"fmt"
	"strings"

	"github.com/metad/metad/fsm/fsmpb"
)

// commitObject applies a stream-set object: one object version and an
// append to each of several streams naming byte ranges of it (G16).
//
// Invariant: all or none. Every check runs against the state before the
// command, and the state changes only once none refused; then the object
// is registered and every append committed at index, so a reader at any
// version sees all of the object's appends or none of them. A refusal
// names every refused append in Result.append_rejections, in the
// command's order, and carries the first as Result.rejection.
func (m *Machine) commitObject(index uint64, c *fsmpb.CommitObject) *fsmpb.Result {
	if m.Level() < streamSetLevel {
		// As a binary of a lower level decides it: it does not know the
		// operation, and Validate refuses a command without one.
		return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "", "a stream-set object needs feature level %d; the cluster is at %d", streamSetLevel, m.Level())
	}
	ref := refOf(c.Object)
	if rej := m.checkRegisterVersion(index, ref, c.Size, "object", "size"); rej != nil {
		return rej
	}
	streams := make([]*stream, len(c.Appends))
	var refused []*fsmpb.AppendRejection
	for i, a := range c.Appends {
		s, rej := m.checkObjectAppend(index, a, c.Size)
		if rej != nil {
			refused = append(refused, appendRejection(i, a.StreamId, rej))
			continue
		}
		streams[i] = s
	}
	if len(refused) > 0 {
		return refuseObject(index, len(c.Appends), refused)
	}
	obj := m.registerVersion(index, ref, c.Size)
	var refs uint64
	for i, a := range c.Appends {
		refs += m.appendTo(index, streams[i], obj, appendOf(a.ExpectedStart, a.End, a.Bytes, a.WriterEpoch, m.dataChecksum(a.DataCrc32C)), a.IndexGen0)
	}
	m.addReferences(obj.ref, refs)
	return &fsmpb.Result{Version: index}
}

// checkObjectAppend is commitAppend's checks for one append of a
// stream-set object of size bytes; the object's own checks are
// commitObject's. Fields are named relative to the append.
func (m *Machine) checkObjectAppend(index uint64, a *fsmpb.ObjectAppend, size uint64) (*stream, *fsmpb.Result) {
	s, rej := m.lookupStream(index, a.StreamId)
	if rej != nil {
		return nil, rej
	}
	if rej := checkAppend(index, s, a.WriterEpoch, a.ExpectedStart); rej != nil {
		return nil, rej
	}
	b := byteRangeOf(a.Bytes)
	if b.Offset > size || b.Length > size-b.Offset {
		return nil, reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "bytes",
			"bytes [%d, %d+%d) lie outside the object's %d bytes", b.Offset, b.Offset, b.Length, size)
	}
	return s, nil
}

func appendRejection(i int, streamID uint64, res *fsmpb.Result) *fsmpb.AppendRejection {
	rej := res.Rejection
	rej.Field = fieldIndex("appends", i) + "." + rej.Field
	return &fsmpb.AppendRejection{
		Index: uint32(i), StreamId: streamID, Rejection: rej,
		CommittedEnd: res.CommittedEnd, WriterEpoch: res.WriterEpoch,
	}
}

// maxNamedRefusals bounds how many refused appends the summary message
// spells out; append_rejections holds them all.
const maxNamedRefusals = 8

// refuseObject is the refusal of a stream-set object of n appends: the
// first refused append's code and field, and a message naming them all.
func refuseObject(index uint64, n int, refused []*fsmpb.AppendRejection) *fsmpb.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d appends refused, nothing committed:", len(refused), n)
	for i, r := range refused {
		if i == maxNamedRefusals {
			fmt.Fprintf(&b, "; and %d more", len(refused)-i)
			break
		}
		sep := ";"
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s stream %d (%s): %s", sep, r.StreamId, r.Rejection.Code, r.Rejection.Message)
	}
	first := refused[0]
	return &fsmpb.Result{
		Version: index,
		Rejection: &fsmpb.Rejection{
			Code: first.Rejection.Code, Field: first.Rejection.Field, Message: b.String(),
		},
		StreamId: first.StreamId, CommittedEnd: first.CommittedEnd, WriterEpoch: first.WriterEpoch,
		AppendRejections: refused,
	}
}
