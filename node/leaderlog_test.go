package node

import (
	"fmt"
	"testing"
	"time"
)

func TestLeaderLogRecordsChangesOnly(t *testing.T) {
	var l leaderLog
	at := time.Unix(0, 0)
	for _, o := range []struct {
		id   string
		term uint64
	}{{"", 1}, {"", 2}, {"n1", 2}, {"n1", 2}, {"n1", 3}, {"n2", 3}, {"", 3}, {"", 4}} {
		at = at.Add(time.Second)
		l.observe(o.id, o.term, at)
	}
	got := fmt.Sprint(describe(l.recent()))
	want := "[ n2@3 n1@3 n1@2 ]" // newest first; "" is no leader, whatever the term
	if got != want {
		t.Errorf("recent = %s, want %s", got, want)
	}
}

func TestLeaderLogIsBounded(t *testing.T) {
	var l leaderLog
	for term := range uint64(3 * leaderLogSize) {
		l.observe("n1", term, time.Unix(int64(term), 0))
	}
	r := l.recent()
	if len(r) != leaderLogSize {
		t.Fatalf("kept %d changes, want %d", len(r), leaderLogSize)
	}
	if r[0].Term != 3*leaderLogSize-1 || r[len(r)-1].Term != 2*leaderLogSize {
		t.Errorf("kept terms %d..%d, want the newest %d..%d", r[len(r)-1].Term, r[0].Term, 2*leaderLogSize, 3*leaderLogSize-1)
	}
}

func describe(cs []leaderChange) []string {
	var s []string
	for _, c := range cs {
		if c.LeaderID == "" {
			s = append(s, "")
			continue
		}
		s = append(s, fmt.Sprintf("%s@%d", c.LeaderID, c.Term))
	}
	return s
}
