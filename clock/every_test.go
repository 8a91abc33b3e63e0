package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/internal/fakeclock"
)

// Every runs its step at once, then once per period on the clock it is
// given, and ends when the step says so or the context ends.
func TestEveryRunsAtOnceThenEachPeriod(t *testing.T) {
	fc := fakeclock.New(time.Unix(0, 0))
	runs := make(chan int, 10)
	done := make(chan struct{})
	n := 0
	go func() {
		defer close(done)
		clock.Every(context.Background(), fc, time.Second, func() bool {
			n++
			runs <- n
			return n < 3
		})
	}()
	if got := <-runs; got != 1 {
		t.Fatalf("first run %d, want 1 at once", got)
	}
	for want := 2; want <= 3; want++ {
		fc.BlockUntil(1)
		select {
		case got := <-runs:
			t.Fatalf("run %d before its period passed", got)
		default:
		}
		fc.Advance(time.Second)
		if got := <-runs; got != want {
			t.Fatalf("run %d, want %d", got, want)
		}
	}
	<-done // the step said stop
}

func TestEveryEndsWithItsContext(t *testing.T) {
	fc := fakeclock.New(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		clock.Every(ctx, fc, time.Hour, func() bool { return true })
	}()
	fc.BlockUntil(1)
	cancel()
	<-done
}
