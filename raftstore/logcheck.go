package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/raft"
)

// ErrCorruptLog: a raft log entry read back from disk does not match the
// checksum it was written with. The node must not apply or send it.
var ErrCorruptLog = errors.New("raftstore: corrupt raft log entry")

// CorruptLogError names the entry and the store it was read from; it
// matches ErrCorruptLog.
type CorruptLogError struct {
	Path         string // the raft log: raft-wal's dir or raft.db
	Index, Term  uint64
	Stored, Read uint32 // the checksum written, and that of what was read
}

func (e *CorruptLogError) Error() string {
	return fmt.Sprintf("raftstore: raft log entry %d (term %d) read back from %s does not match its checksum (written %08x, read %08x): "+
		"the file is corrupt and this node stops rather than apply or send it; wipe this node's data dir and let it rejoin, "+
		"it receives the state by snapshot from the leader", e.Index, e.Term, e.Path, e.Stored, e.Read)
}

// Is makes errors.Is(err, ErrCorruptLog) true.
func (e *CorruptLogError) Is(target error) bool { return target == ErrCorruptLog }

// How an entry carries its checksum on disk: raft-wal checks only the
// commit frames of its tail segment when it opens (a torn tail), and bbolt
// checks only its meta pages, so neither would notice a flipped byte in
// an entry's data. durableLog appends a trailer to Log.Extensions as it
// stores a copy of each entry, and checks and strips it as it reads one
// back: raft, the log cache, the adapter and the followers never see it,
// and each node checks its own disk. An entry without the trailer (one
// written before it existed) is read unchecked.
//
//	Extensions on disk = original extensions | crc32c (4, little endian) | logCheckMagic (4)
var logCheckMagic = []byte("\x00mc1")

const logCheckLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logSum is the checksum of what an entry means: index, term, type, data
// and its original extensions (not AppendedAt, which raft does not use).
func logSum(l *raft.Log, ext []byte) uint32 {
	var head [17]byte
	binary.LittleEndian.PutUint64(head[0:], l.Index)
	binary.LittleEndian.PutUint64(head[8:], l.Term)
	head[16] = byte(l.Type)
	sum := crc32.Update(0, castagnoli, head[:])
	sum = crc32.Update(sum, castagnoli, l.Data)
	return crc32.Update(sum, castagnoli, ext)
}

// sealed returns a copy of l whose extensions end in its checksum.
func sealed(l *raft.Log) *raft.Log {
	c := *l
	c.Extensions = make([]byte, 0, len(l.Extensions)+logCheckLen)
	c.Extensions = append(c.Extensions, l.Extensions...)
	c.Extensions = binary.LittleEndian.AppendUint32(c.Extensions, logSum(l, l.Extensions))
	c.Extensions = append(c.Extensions, logCheckMagic...)
	return &c
}

// unseal checks and strips the trailer of an entry read back from path.
func unseal(l *raft.Log, path string) error {
	n := len(l.Extensions)
	if n < logCheckLen || !bytes.Equal(l.Extensions[n-4:], logCheckMagic) {
		return nil // written before entries carried a checksum
	}
	ext := l.Extensions[:n-logCheckLen]
	stored := binary.LittleEndian.Uint32(l.Extensions[n-logCheckLen:])
	if read := logSum(l, ext); read != stored {
		return &CorruptLogError{Path: path, Index: l.Index, Term: l.Term, Stored: stored, Read: read}
	}
	if len(ext) == 0 {
		ext = nil
	}
	l.Extensions = ext
	return nil
}
