package raftstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// A snapshot file is what `metad snapshot save` writes and `snapshot
// restore` and `snapshot inspect` read: one self-describing, checksummed
// file around a snapshot stream.
//
//	magic     [8]byte  "MDSNAPF1"
//	meta len  uint32   big-endian
//	meta      JSON     FileMeta
//	stream    the snapshot stream (doc.go): 16-byte header, fsm snapshot
//	sum       [32]byte SHA-256 of every byte before it
//
// The fsm snapshot inside already checks itself (header CRC, record count,
// body SHA-256, canonical order, invariants); the trailing sum also covers
// the envelope, the meta and the stream header, and tells a truncated file
// from a corrupt one at once.
const (
	fileMagic   = "MDSNAPF1"
	maxMetaSize = 1 << 20
	fileSumSize = sha256.Size
)

// ErrCorruptFile is wrapped by every error caused by a snapshot file's
// bytes (as opposed to the reader failing).
var ErrCorruptFile = errors.New("raftstore: corrupt snapshot file")

// FileMeta describes a snapshot file. It is informational: the stream's own
// header decides the index a restore starts from.
type FileMeta struct {
	// Format is the file format version, 1.
	Format int `json:"format"`
	// NodeID is the node that took the snapshot.
	NodeID string `json:"node_id"`
	// Index and Term are the raft index the state reflects and its term.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// TakenAt is the taking node's wall clock.
	TakenAt time.Time `json:"taken_at"`
	// Servers is the source cluster's raft configuration.
	Servers []Server `json:"servers"`
	// ClusterID is the source cluster's id, when the writer knew it
	// (scheduled backups do); informational, like the rest.
	ClusterID string `json:"cluster_id,omitempty"`
}

// FileWriter writes a snapshot file: NewFileWriter writes the envelope and
// the meta, Write takes the stream, Close appends the checksum. Close does
// not close the underlying writer.
type FileWriter struct {
	w   io.Writer
	sum hash.Hash
	n   int64
}

// NewFileWriter starts a snapshot file on w.
func NewFileWriter(w io.Writer, meta FileMeta) (*FileWriter, error) {
	meta.Format = 1
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	fw := &FileWriter{w: w, sum: sha256.New()}
	var head [12]byte
	copy(head[:8], fileMagic)
	binary.BigEndian.PutUint32(head[8:], uint32(len(mb)))
	if _, err := fw.Write(head[:]); err != nil {
		return nil, err
	}
	if _, err := fw.Write(mb); err != nil {
		return nil, err
	}
	return fw, nil
}

// Write writes stream bytes.
func (fw *FileWriter) Write(p []byte) (int, error) {
	n, err := fw.w.Write(p)
	fw.sum.Write(p[:n])
	fw.n += int64(n)
	return n, err
}

// Close writes the trailing checksum and returns it.
func (fw *FileWriter) Close() ([]byte, error) {
	sum := fw.sum.Sum(nil)
	_, err := fw.w.Write(sum)
	fw.n += int64(len(sum))
	return sum, err
}

// Size is the number of bytes written so far.
func (fw *FileWriter) Size() int64 { return fw.n }

// File is an opened snapshot file.
type File struct {
	Meta FileMeta
	// Sum is the checksum the file ends with (hex).
	Sum        string
	r          io.ReaderAt
	size       int64
	streamFrom int64
}

// OpenFile reads a snapshot file's envelope and meta from r (of size
// bytes). It does not read the stream: Verify checks the whole file,
// Stream returns a reader over the snapshot stream.
func OpenFile(r io.ReaderAt, size int64) (*File, error) {
	var head [12]byte
	if size < int64(len(head))+fileSumSize {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrCorruptFile, size)
	}
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return nil, fmt.Errorf("raftstore: read snapshot file: %w", err)
	}
	if string(head[:8]) != fileMagic {
		return nil, fmt.Errorf("%w: bad magic %q (not a metad snapshot file)", ErrCorruptFile, head[:8])
	}
	metaLen := int64(binary.BigEndian.Uint32(head[8:]))
	if metaLen > maxMetaSize || int64(len(head))+metaLen+fileSumSize > size {
		return nil, fmt.Errorf("%w: meta length %d does not fit in %d bytes", ErrCorruptFile, metaLen, size)
	}
	mb := make([]byte, metaLen)
	if _, err := r.ReadAt(mb, int64(len(head))); err != nil {
		return nil, fmt.Errorf("raftstore: read snapshot file: %w", err)
	}
	f := &File{r: r, size: size, streamFrom: int64(len(head)) + metaLen}
	if err := json.Unmarshal(mb, &f.Meta); err != nil {
		return nil, fmt.Errorf("%w: meta: %w", ErrCorruptFile, err)
	}
	if f.Meta.Format != 1 {
		return nil, fmt.Errorf("%w: format %d, this binary reads 1", ErrCorruptFile, f.Meta.Format)
	}
	sum := make([]byte, fileSumSize)
	if _, err := r.ReadAt(sum, size-fileSumSize); err != nil {
		return nil, fmt.Errorf("raftstore: read snapshot file: %w", err)
	}
	f.Sum = hex.EncodeToString(sum)
	return f, nil
}

// StreamSize is the length of the snapshot stream in the file.
func (f *File) StreamSize() int64 { return f.size - fileSumSize - f.streamFrom }

// Stream returns a reader over the snapshot stream. It does not check the
// file's checksum: call Verify first.
func (f *File) Stream() io.Reader {
	return io.NewSectionReader(f.r, f.streamFrom, f.StreamSize())
}

// VerifySize is the number of bytes Verify reads (all but the checksum).
func (f *File) VerifySize() int64 { return f.size - fileSumSize }

// Verify reads the whole file and checks its trailing SHA-256. wrap, if
// not nil, wraps the reader (for a progress display).
func (f *File) Verify(wrap func(io.Reader) io.Reader) error {
	var r io.Reader = io.NewSectionReader(f.r, 0, f.size-fileSumSize)
	if wrap != nil {
		r = wrap(r)
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("raftstore: read snapshot file: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.Sum {
		return fmt.Errorf("%w: SHA-256 of the contents is %s, the file says %s", ErrCorruptFile, got, f.Sum)
	}
	return nil
}

// StreamSummary is what a snapshot stream holds: its header, fsm's header,
// and how many records of each type.
type StreamSummary struct {
	// Index is the stream header's raft index.
	Index uint64
	// FSM is fsm's snapshot header (format, applied index, record count,
	// body checksum).
	FSM fsm.Header
	// Counts maps record types (meta, object, stream, evidence, generation,
	// index_record, pin, dedup) to how many the snapshot holds.
	Counts map[string]uint64
}

// SummarizeStream reads a whole snapshot stream, checking the stream
// header, fsm's header CRC, record count and body checksum, and counts the
// records by type. It does not check record order or invariants (Restore
// does); errors caused by the bytes wrap fsm.ErrCorruptSnapshot.
func SummarizeStream(r io.Reader) (StreamSummary, error) {
	var sum StreamSummary
	index, err := readStreamHeader(r)
	if err != nil {
		return sum, err
	}
	sum.Index = index
	sum.Counts = map[string]uint64{}
	sum.FSM, err = fsm.ReadSnapshot(r, func(rec *fsmpb.SnapshotRecord) error {
		sum.Counts[recordType(rec)]++
		return nil
	})
	if err != nil {
		return sum, err
	}
	if sum.FSM.AppliedIndex > index {
		return sum, fmt.Errorf("%w: machine applied %d beyond the stream header's %d",
			fsm.ErrCorruptSnapshot, sum.FSM.AppliedIndex, index)
	}
	return sum, nil
}

// DiffStreams compares two snapshot streams record by record, calling visit
// for each record that differs (fsm.DiffSnapshots). The summaries carry
// each stream's index and fsm header (no counts).
func DiffStreams(a, b io.Reader, visit func(fsm.RecordDiff) error) (StreamSummary, StreamSummary, error) {
	var sa, sb StreamSummary
	var err error
	if sa.Index, err = readStreamHeader(a); err != nil {
		return sa, sb, fmt.Errorf("snapshot A: %w", err)
	}
	if sb.Index, err = readStreamHeader(b); err != nil {
		return sa, sb, fmt.Errorf("snapshot B: %w", err)
	}
	sa.FSM, sb.FSM, err = fsm.DiffSnapshots(a, b, visit)
	return sa, sb, err
}

// VerifyStream reads a whole snapshot stream the way a node restores it
// (fsm.Restore: checksums, canonical order, every invariant) and discards
// the result. It returns the stream header's index.
func VerifyStream(r io.Reader) (uint64, error) {
	a := newFSMAdapter(slog.New(slog.DiscardHandler))
	if err := a.Restore(io.NopCloser(r)); err != nil {
		return 0, err
	}
	return a.appliedIndex(), nil
}

// readStreamHeader reads the 16-byte stream header and returns its index.
func readStreamHeader(r io.Reader) (uint64, error) {
	var hdr [snapshotHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, fmt.Errorf("%w: stream header: %w", fsm.ErrCorruptSnapshot, err)
	}
	if !bytes.Equal(hdr[:8], []byte(snapshotMagic)) {
		return 0, fmt.Errorf("%w: stream header: bad magic %q", fsm.ErrCorruptSnapshot, hdr[:8])
	}
	return binary.BigEndian.Uint64(hdr[8:]), nil
}

// recordOneof describes SnapshotRecord's record oneof.
var recordOneof = (&fsmpb.SnapshotRecord{}).ProtoReflect().Descriptor().Oneofs().ByName("record")

// recordType names a snapshot record's type: its field name in the oneof
// (meta, stream, ..., tombstone), so a type added to the proto is named
// without a case here; "unknown" only for a record that sets none.
func recordType(rec *fsmpb.SnapshotRecord) string {
	if f := rec.ProtoReflect().WhichOneof(recordOneof); f != nil {
		return string(f.Name())
	}
	return "unknown"
}
