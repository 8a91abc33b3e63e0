package raftstore

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// TestCheckedStableKeepsRaftBoltdbsFormat: values round-trip through the
// checked store, and the plain keys stay what raft-boltdb writes, so an
// older release reads the same raft.db.
func TestCheckedStableKeepsRaftBoltdbsFormat(t *testing.T) {
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	s := &checkedStable{inner: bolt, path: "raft.db"}
	if err := s.SetUint64(keyCurrentTerm, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64(keyCurrentTerm); err != nil || v != 7 {
		t.Errorf("GetUint64: %d, %v; want 7", v, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "n2" {
		t.Errorf("Get: %q, %v; want n2", v, err)
	}
	if v, err := bolt.GetUint64(keyCurrentTerm); err != nil || v != 7 {
		t.Errorf("the plain key as raft-boltdb reads it: %d, %v; want 7", v, err)
	}
	if v, err := bolt.Get([]byte("LastVoteCand")); err != nil || string(v) != "n2" {
		t.Errorf("the plain key as raft-boltdb reads it: %q, %v; want n2", v, err)
	}
	if _, err := s.Get([]byte("nothing")); err == nil || !missingKey(err) {
		t.Errorf("a missing key: %v, want raft-boltdb's not found", err)
	}
}

// TestCheckedStableRules: a value written before the check existed is read
// as it is; after a crash between the checked copy and the plain key the
// checked copy wins; a damaged checked copy is an error naming the key.
func TestCheckedStableRules(t *testing.T) {
	inner, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	s := &checkedStable{inner: inner, path: "/data/raft/raft.db"}

	if err := inner.SetUint64(keyCurrentTerm, 3); err != nil { // an older release's write
		t.Fatal(err)
	}
	if v, err := s.GetUint64(keyCurrentTerm); err != nil || v != 3 {
		t.Errorf("a legacy value: %d, %v; want 3", v, err)
	}

	if err := s.SetUint64(keyCurrentTerm, 4); err != nil {
		t.Fatal(err)
	}
	if err := inner.SetUint64(keyCurrentTerm, 3); err != nil { // as if the plain write never happened
		t.Fatal(err)
	}
	if v, err := s.GetUint64(keyCurrentTerm); err != nil || v != 4 {
		t.Errorf("after a crash between the two writes: %d, %v; want the checked copy's 4", v, err)
	}

	sealed, _ := inner.Get(sumKey(keyCurrentTerm))
	for _, damage := range []func(b []byte){
		func(b []byte) { b[7] ^= 0x01 },                         // the value
		func(b []byte) { b[9] ^= 0x01 },                         // the checksum
		func(b []byte) { b[len(b)-1] ^= 0x01 },                  // the magic
		func(b []byte) { binary.BigEndian.PutUint64(b, 1<<40) }, // a plausible other term
	} {
		b := append([]byte(nil), sealed...)
		damage(b)
		if err := inner.Set(sumKey(keyCurrentTerm), b); err != nil {
			t.Fatal(err)
		}
		_, err := s.GetUint64(keyCurrentTerm)
		var cse *CorruptStableError
		if !errors.As(err, &cse) || cse.Key != "CurrentTerm" || !strings.Contains(err.Error(), "/data/raft/raft.db") {
			t.Errorf("a damaged checked copy: %v; want a CorruptStableError naming CurrentTerm and the file", err)
		}
	}
}

// TestFlippedByteInTheTermIsRefusedAtStart: a byte flipped in raft.db's
// record of the current term stops the node at start, naming the key and
// the file; once the byte is restored it opens at its term.
func TestFlippedByteInTheTermIsRefusedAtStart(t *testing.T) {
	c := newCluster(t, 1, nil)
	c.propose(createStream("x"))
	term := c.store(0).Term()
	c.stop(0)
	val := binary.BigEndian.AppendUint64(nil, term)
	needle := binary.LittleEndian.AppendUint32(val, stableSum(keyCurrentTerm, val))
	file := flipIn(t, c.nodes[0].cfg.DataDir, needle)
	if filepath.Base(file) != "raft.db" {
		t.Fatalf("the term's checked copy was found in %s, want raft.db", file)
	}

	_, err := open(c.nodes[0].cfg, nil, c.logger, c.nodes[0].opts)
	if !errors.Is(err, ErrCorruptStable) || !strings.Contains(err.Error(), "CurrentTerm") || !strings.Contains(err.Error(), file) {
		t.Fatalf("open with a flipped term: %v; want ErrCorruptStable naming CurrentTerm and %s", err, file)
	}

	flipped := append([]byte(nil), needle...)
	flipped[len(flipped)-1] ^= 0x01
	flipIn(t, c.nodes[0].cfg.DataDir, flipped)
	c.start(0)
	if got := c.store(0).Term(); got < term {
		t.Errorf("term %d after the byte is restored, want at least %d", got, term)
	}
}
