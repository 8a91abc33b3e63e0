package backup

import (
	"fmt"
	"os"

	"github.com/metad/metad/raftstore"
)

// Verified is what reading a backup back found.
type Verified struct {
	Meta    raftstore.FileMeta
	Bytes   int64
	Records uint64
	SHA256  string
}

// VerifyFile checks a snapshot file as `metad snapshot inspect` does: the
// envelope and meta, the file's SHA-256, the stream and fsm headers and
// body checksum, the meta's index against the stream's, and a full
// restore in memory (record order, every invariant).
func VerifyFile(path string) (Verified, error) {
	f, err := os.Open(path)
	if err != nil {
		return Verified{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Verified{}, err
	}
	sf, err := raftstore.OpenFile(f, st.Size())
	if err != nil {
		return Verified{}, err
	}
	if err := sf.Verify(nil); err != nil {
		return Verified{}, err
	}
	sum, err := raftstore.SummarizeStream(sf.Stream())
	if err != nil {
		return Verified{}, err
	}
	if sum.Index != sf.Meta.Index {
		return Verified{}, fmt.Errorf("%w: stream header index %d, meta index %d", raftstore.ErrCorruptFile, sum.Index, sf.Meta.Index)
	}
	if _, err := raftstore.VerifyStream(sf.Stream()); err != nil {
		return Verified{}, err
	}
	return Verified{Meta: sf.Meta, Bytes: st.Size(), Records: sum.FSM.Records, SHA256: sf.Sum}, nil
}
