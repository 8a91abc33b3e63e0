package fsm

import (
	"flag"

	"github.com/metad/metad/fsm/fsmpb"
)

// Flags shared by the tests of this package.
var (
	flagRewrite = flag.Bool("rewrite", false, "regenerate the expected output of testdata/*.txt scripts")
	flagSeed    = flag.Int64("seed", 0, "seed of the randomised tests (0: derive one from the test name and print it)")
	flagLong    = flag.Bool("long", false, "run the randomised tests for many more sequences (also env FSM_LONG=1)")
)

// Constructors for commands, so that tests read as the operations they do.

func cmdCreate(name string) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: name}}}
}

func cmdOpen(s uint64) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: s}}}
}

func cmdAppend(s, epoch, start, end uint64, obj ObjectRef, b ByteRange, index bool) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
		StreamId: s, WriterEpoch: epoch, ExpectedStart: start, End: end,
		Object: obj.PB(), Bytes: b.PB(), IndexGen0: index,
	}}}
}

func cmdPublish(s uint64, view View, gen, epoch uint64, cover Range, complete bool, recs ...*fsmpb.IndexRecord) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
		StreamId: s, View: view, Generation: gen, WriterEpoch: epoch,
		Coverage: cover.PB(), Records: recs, Complete: complete,
	}}}
}

func cmdRetire(s uint64, view View, gen uint64) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_RetireGeneration{RetireGeneration: &fsmpb.RetireGeneration{
		StreamId: s, View: view, Generation: gen,
	}}}
}

func cmdTrim(s, offset uint64) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: s, Offset: offset}}}
}

func cmdSeal(s uint64) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_Seal{Seal: &fsmpb.Seal{StreamId: s}}}
}

func cmdDelete(s uint64) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_DeleteStream{DeleteStream: &fsmpb.DeleteStream{StreamId: s}}}
}

func cmdRegister(obj ObjectRef, size uint64) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{
		Object: obj.PB(), Size: size,
	}}}
}

func cmdPin(obj ObjectRef, holder string, ttl int64) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{
		Object: obj.PB(), Holder: holder, TtlNanos: ttl,
	}}}
}

func cmdRelease(id uint64) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_ReleasePin{ReleasePin: &fsmpb.ReleasePin{PinId: id}}}
}

func cmdDeleting(obj ObjectRef) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_MarkObjectDeleting{MarkObjectDeleting: &fsmpb.MarkObjectDeleting{Object: obj.PB()}}}
}

func cmdDeleted(obj ObjectRef) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_MarkObjectDeleted{MarkObjectDeleted: &fsmpb.MarkObjectDeleted{Object: obj.PB()}}}
}

func cmdReport(key IndexKey, version uint64, kind FailureKind, detail string) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: key.PB(), Version: version, Kind: kind, Detail: detail,
	}}}
}

func cmdRepair(s, evStart, evVersion uint64, replace []*fsmpb.RecordVersion, rec *fsmpb.IndexRecord) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_RepairGen0{RepairGen0: &fsmpb.RepairGen0{
		StreamId: s, EvidenceStart: evStart, EvidenceVersion: evVersion, Replace: replace, Record: rec,
	}}}
}

// withID sets the request id and returns the command.
func withID(c *fsmpb.Command, id string) *fsmpb.Command {
	c.RequestId = id
	return c
}
