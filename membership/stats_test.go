package membership

import (
	"errors"
	"testing"
	"time"
)

type statsMap map[string]string

func (s statsMap) Stats() map[string]string { return s }

func TestStatsFromRaft(t *testing.T) {
	cases := []struct {
		in      statsMap
		contact time.Duration
		term    uint64
		index   uint64
		bad     bool
	}{
		{in: statsMap{"last_contact": "0", "last_log_term": "3", "last_log_index": "40"}, contact: 0, term: 3, index: 40},
		{in: statsMap{"last_contact": "never", "last_log_term": "0", "last_log_index": "0"}, contact: -1},
		{in: statsMap{"last_contact": "12.5ms", "last_log_term": "2", "last_log_index": "7"}, contact: 12500 * time.Microsecond, term: 2, index: 7},
		{in: statsMap{"last_contact": "soon", "last_log_term": "2", "last_log_index": "7"}, bad: true},
		{in: statsMap{"last_contact": "0", "last_log_term": "", "last_log_index": "7"}, bad: true},
		{in: statsMap{"last_contact": "0", "last_log_term": "1", "last_log_index": "-1"}, bad: true},
	}
	for _, c := range cases {
		got, err := StatsFromRaft(c.in)
		if c.bad {
			if !errors.Is(err, ErrBadStats) {
				t.Errorf("%v: err %v, want ErrBadStats", c.in, err)
			}
			continue
		}
		if err != nil || got.LastContact != c.contact || got.LastTerm != c.term || got.LastIndex != c.index {
			t.Errorf("%v: got %+v, %v", c.in, got, err)
		}
	}
}
