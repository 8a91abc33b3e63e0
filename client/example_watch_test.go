package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
)

// The README's "Following a stream" example, kept compiling here.
func exampleFollow(ctx context.Context, c *client.Client, streamID uint64) error {
	for ev, err := range c.Watch(ctx, streamID, 0) {
		if err != nil {
			var ce *client.CompactedError
			if errors.As(err, &ce) {
				// History after our version is gone: re-read the stream
				// (ce.CommittedEnd, ce.Trim) and watch again from ce.Version.
				return rewatch(ctx, c, streamID, ce.Version)
			}
			return err
		}
		if ev.Kind == metadpb.WatchEventKind_WATCH_APPENDED {
			fmt.Println("committed up to", ev.CommittedEnd)
		}
	}
	return nil
}

// rewatch stands for the caller's own recovery.
func rewatch(context.Context, *client.Client, uint64, uint64) error { return nil }

var _ = exampleFollow
