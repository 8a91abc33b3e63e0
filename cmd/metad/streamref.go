package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
)

// A STREAM argument is a stream's id or its name, for every command that
// takes one: digits are an id (which is why `stream create` refuses a name
// of digits only), anything else a name, looked up with DescribeStream.

// streamRequest is the DescribeStream request that finds the stream arg
// names.
func streamRequest(arg string) *metadpb.DescribeStreamRequest {
	if id, err := strconv.ParseUint(arg, 10, 64); err == nil {
		return &metadpb.DescribeStreamRequest{StreamId: id}
	}
	return &metadpb.DescribeStreamRequest{Name: arg}
}

// checkStreamArg refuses an argument that can name no stream, before
// anything is dialled.
func checkStreamArg(arg string) error {
	if arg == "" {
		return usageError{errors.New("stream: give a stream id or name")}
	}
	return nil
}

// resolveStream returns the id of the stream arg names: an id as it is,
// with no call, a name looked up at the cluster (STREAM_NOT_FOUND, exit 3,
// if there is none).
func resolveStream(ctx context.Context, c *client.Client, arg string) (uint64, error) {
	req := streamRequest(arg)
	if req.Name == "" {
		return req.StreamId, nil
	}
	resp, err := client.Call(ctx, c, c.Metad.DescribeStream, req)
	if err != nil {
		return 0, fmt.Errorf("stream %q: %w", arg, err)
	}
	return resp.Stream.Id, nil
}

// runStream is run for a command whose STREAM argument is arg: fn gets the
// stream's id.
func (o *clientOpts) runStream(cmd *cobra.Command, arg string, fn func(ctx context.Context, c *client.Client, id uint64) error) error {
	if err := checkStreamArg(arg); err != nil {
		return err
	}
	return o.run(cmd, func(ctx context.Context, c *client.Client) error {
		id, err := resolveStream(ctx, c, arg)
		if err != nil {
			return err
		}
		return fn(ctx, c, id)
	})
}
