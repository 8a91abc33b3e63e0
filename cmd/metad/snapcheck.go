package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/metad/metad/raftstore"
)

// verifySnapshot checks a snapshot file's trailing SHA-256 (wrap, if not
// nil, wraps the reader for a progress bar). On a mismatch it tells the
// commonest cause, a file cut short by an interrupted copy, from other
// corruption: a truncated file's last 32 bytes are not a checksum at all,
// and quoting them as one only misleads.
func verifySnapshot(f *os.File, sf *raftstore.File, wrap func(io.Reader) io.Reader) error {
	err := sf.Verify(wrap)
	if err == nil || !errors.Is(err, raftstore.ErrCorruptFile) {
		return err
	}
	if size, ok := truncatedFile(f); ok {
		return fmt.Errorf("%w: the file is truncated: its snapshot stream ends early, at %s (%d bytes), before the end of the stream and the checksum that follows it; it was not completely written or copied", raftstore.ErrCorruptFile, humanBytes(size), size)
	}
	return fmt.Errorf("%w: the contents do not match the file's SHA-256: the file is corrupted", raftstore.ErrCorruptFile)
}

// truncatedFile reports whether the snapshot stream in f, read to the end
// of the file (the would-be checksum included), ends before the stream
// does, and f's size.
func truncatedFile(f *os.File) (int64, bool) {
	st, err := f.Stat()
	if err != nil {
		return 0, false
	}
	var head [12]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return st.Size(), false
	}
	from := int64(len(head)) + int64(binary.BigEndian.Uint32(head[8:]))
	if from > st.Size() {
		return st.Size(), true
	}
	_, err = raftstore.SummarizeStream(io.NewSectionReader(f, from, st.Size()-from))
	return st.Size(), errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
