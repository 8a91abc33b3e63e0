package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/metad/metad/client"
	"github.com/metad/metad/objectstore"
)

// A broker's write side: one Writer for every stream it owns. Appends are
// buffered and committed together, one object per flush; Append returns
// once its records are durably committed, with their offsets.
func ExampleWriter() {
	ctx := context.Background()
	store, err := objectstore.NewLocal(os.TempDir()) // the servers' --object-dir (or objectstore.Open of their --object-store)
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.New(client.Config{Addrs: []string{"127.0.0.1:7410"}, Objects: store})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w, err := c.NewWriter(client.WriterConfig{FlushBytes: 1 << 20, FlushInterval: 5 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close(ctx) // flushes what is still buffered

	const streamID = 1 // created beforehand with CreateStream
	ack, err := w.Append(ctx, streamID, []byte("record 1"), []byte("record 2"))
	var ae *client.AppendError
	switch {
	case errors.Is(err, client.ErrFenced):
		// Another broker opened the stream: it is no longer ours.
		return
	case errors.As(err, &ae):
		// Refused or in doubt; nothing after it in this stream committed.
		log.Printf("stream %d: %v", ae.StreamID, ae.Err)
		return
	case err != nil:
		log.Fatal(err)
	}
	fmt.Printf("offsets [%d, %d) at version %d\n", ack.Start, ack.End, ack.Version)
}
