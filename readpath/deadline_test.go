package readpath

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/resolver"
)

// TestReleaseEndsWithItsContext: releasing a pin adds no bound of its own
// on this node. The proposal gets the very deadline the resolver gave the
// release (the caller's, at the latest), and a release whose proposal
// hangs — a Raft without quorum, a leader that does not answer — returns
// once that context ends. A shared pin is not proposed at all.
func TestReleaseEndsWithItsContext(t *testing.T) {
	var got []time.Time
	hanging := func(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
		if cmd.GetReleasePin() == nil {
			t.Errorf("proposed %v, want a ReleasePin", cmd)
		}
		dl, _ := ctx.Deadline()
		got = append(got, dl)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	p := pinner{propose: hanging}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	want, _ := ctx.Deadline()
	if err := p.Release(ctx, resolver.Pin{ID: 7}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("release with a hanging proposal returned %v, want the context's end", err)
	}
	if len(got) != 1 || !got[0].Equal(want) {
		t.Fatalf("proposal deadlines %v, want exactly the release's %v", got, want)
	}
	if err := p.Release(ctx, resolver.Pin{ID: 8, Shared: true}); err != nil || len(got) != 1 {
		t.Fatalf("release of a shared pin: %v, %d proposals", err, len(got))
	}
}
