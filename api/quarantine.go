package api

import (
	"context"
	"fmt"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/objectstore"
)

// quarantineScanBudget bounds the records one ListQuarantined call
// examines, quarantined or not; a page may come back short with next set.
const quarantineScanBudget = 100_000

// ListQuarantined implements the Metad service: quarantined records, a
// page at a time, linearizably.
func (s *Server) ListQuarantined(ctx context.Context, req *metadpb.ListQuarantinedRequest) (*metadpb.ListQuarantinedResponse, error) {
	var after *fsm.IndexKey
	if req.After != nil {
		k := indexKeyToFSM(req.After)
		after = &k
	}
	resp := &metadpb.ListQuarantinedResponse{}
	err := s.read(ctx, metadpb.Consistency_LINEARIZABLE, func(m *fsm.Machine) error {
		recs, next := m.Quarantined(after, s.limit(req.Limit), quarantineScanBudget)
		for _, r := range recs {
			resp.Records = append(resp.Records, storedRecordPB(r))
		}
		if next != nil {
			resp.Next = indexKeyPB(*next)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// LiftQuarantine implements the Metad service: verify the record's bytes
// in the object store, then commit the lift conditioned on the version the
// caller listed.
func (s *Server) LiftQuarantine(ctx context.Context, req *metadpb.LiftQuarantineRequest) (*metadpb.LiftQuarantineResponse, error) {
	if req.Key == nil {
		return nil, invalidArgument("key", "required")
	}
	key := indexKeyToFSM(req.Key)
	var rec fsm.RecordInfo
	var found bool
	err := s.store.Read(ctx, func(m *fsm.Machine) error {
		rec, found = m.RecordFrom(key.Stream, key.View, key.Generation, key.Start)
		found = found && rec.Key == key
		return nil
	})
	switch {
	case err != nil:
		return nil, toStatus(err)
	case !found:
		return nil, notFound("key", "no index record %v", key)
	case rec.Status != fsm.RecordQuarantined || rec.Version != req.Version:
		return nil, build(metadpb.Reason_CONDITION_FAILED, reasons.LiftNotAtVersion,
			fmt.Sprintf("record %v is %s at version %d, not quarantined at %d", key, rec.Status, rec.Version, req.Version), "version", nil, nil)
	}
	cerr := objectstore.Check(ctx, s.objects, rec.Object.Key, rec.Object.Identity)
	if cerr == nil {
		// The record's own range too: a quarantine may stand for a slice
		// failing its data checksum inside an object that hashes right.
		cerr = objectstore.CheckRange(ctx, s.objects, rec.Object.Key, rec.Object.Identity,
			int64(rec.Bytes.Offset), int64(rec.Bytes.Length), rec.Data)
	}
	if cerr != nil {
		// Definite either way; a store that could not answer is worth a
		// retry, bytes that do not verify are not.
		spec := reasons.Of(metadpb.Reason_QUARANTINE_NOT_VERIFIED).Spec
		if !objectstore.Unusable(cerr) {
			spec = reasons.StoreUnavailable
		}
		return nil, quarantineNotVerified(spec, fmt.Sprintf("the bytes of %s do not verify, so record %v stays quarantined: %v", rec.Object, key, cerr))
	}
	res, err := s.applyRenamed(ctx, req.RequestId, &fsmpb.Command{Op: &fsmpb.Command_LiftQuarantine{LiftQuarantine: &fsmpb.LiftQuarantine{
		Key: key.PB(), Version: req.Version}}}, map[string]string{"key": "key", "version": "version"})
	if err != nil {
		return nil, err
	}
	s.log.Info("quarantine lifted by an operator: the bytes verify", "key", key.String(), "object", rec.Object.String(), "version", res.Version)
	return &metadpb.LiftQuarantineResponse{Version: res.Version}, nil
}

// quarantineNotVerified refuses a lift whose bytes did not verify (spec
// says whether the store answered).
func quarantineNotVerified(spec reasons.Spec, msg string) error {
	return build(metadpb.Reason_QUARANTINE_NOT_VERIFIED, spec, msg, "key", nil, nil)
}
