package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"
)

type ackedWrite struct {
	at  time.Time
	end uint64
}

type observedRead struct {
	began time.Time
	end   uint64
}

// TestPausedLeaderServesNoStaleReads (G1): SIGSTOP the leader
// while clients write through the others and read through it; the others
// elect a new leader and take writes; SIGCONT. No read answered by the old
// leader may return a committed end older than a write acknowledged
// before that read began.
func TestPausedLeaderServesNoStaleReads(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	old := c.WaitLeader(0)
	var others []int
	for i := range c.Nodes {
		if i != old {
			others = append(others, i)
		}
	}
	w := proc.NewWriter(t, c.Client(others...), "paused")
	reader := c.Client(old)

	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var writes []ackedWrite
	var reads []observedRead
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // one writer, through the other nodes
		defer wg.Done()
		for ctx.Err() == nil {
			wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
			err := w.Append(wctx, 1)
			if err == nil {
				mu.Lock()
				writes = append(writes, ackedWrite{at: time.Now(), end: w.End})
				mu.Unlock()
			}
			wcancel()
		}
	}()
	for range 4 { // readers, through the old leader only
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				began := time.Now()
				rctx, rcancel := context.WithTimeout(ctx, 8*time.Second)
				resp, err := reader.Metad.DescribeStream(rctx, &metadpb.DescribeStreamRequest{StreamId: w.Stream})
				rcancel()
				if err == nil {
					mu.Lock()
					reads = append(reads, observedRead{began: began, end: resp.Stream.CommittedEnd})
					mu.Unlock()
				}
			}
		}()
	}
	c.WaitFor("writes and reads under way", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(writes) >= 5 && len(reads) >= 5
	})
	c.Pause(old)
	mu.Lock()
	pausedAt := len(writes)
	mu.Unlock()
	c.WaitFor("the others to elect and take writes", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(writes)-pausedAt >= 10
	})
	mu.Lock()
	writtenWhilePaused := len(writes) - pausedAt
	mu.Unlock()
	c.Resume(old)
	resumed := time.Now()
	c.WaitFor("reads answered by the old leader after SIGCONT", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return countSince(reads, resumed) >= 20
	})
	cancel()
	wg.Wait()

	if writtenWhilePaused == 0 {
		t.Fatal("no write was acknowledged while the old leader was paused; the test proved nothing")
	}
	checkNoStaleRead(t, writes, reads, c)
	t.Logf("%d writes (%d while paused), %d reads checked (%d begun after SIGCONT)",
		len(writes), writtenWhilePaused, len(reads), countSince(reads, resumed))
}

func countSince(reads []observedRead, t time.Time) int {
	n := 0
	for _, r := range reads {
		if r.began.After(t) {
			n++
		}
	}
	return n
}

func checkNoStaleRead(t *testing.T, writes []ackedWrite, reads []observedRead, c *proc.Cluster) {
	t.Helper()
	for _, r := range reads {
		var floor uint64
		for _, w := range writes {
			if w.at.Before(r.began) && w.end > floor {
				floor = w.end
			}
		}
		if r.end < floor {
			t.Fatalf("stale read: began %s, returned committed end %d, but %d was acknowledged before it began\nlogs: %s",
				r.began.Format(time.StampMicro), r.end, floor, c.Dir)
		}
	}
}
