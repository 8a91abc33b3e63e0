package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
)

// objectPart is one STREAM=FILE argument of `metad object commit`: the
// bytes of one stream's append, and where they land.
type objectPart struct {
	arg    string // as given, for messages
	stream string // id or name, as given
	file   string
	data   []byte
	count  uint64

	// Filled in once the cluster is asked.
	id, epoch, start uint64
	name             string
}

func newObjectCommitCmd(o *clientOpts) *cobra.Command {
	var (
		count      uint64
		countLines bool
		countOf    []string
		epochOf    []string
		key        string
		objects    clientObjectStore
		noIndex    bool
		noData     bool
	)
	cmd := &cobra.Command{
		Use:   "commit STREAM=FILE [STREAM=FILE...]",
		Short: "Commit files as one stream-set object: one append per stream, all or none, at one version",
		Long: `Concatenate the files into one object, write it to the object store once
(--object-store, the servers' URL, or --object-dir), and commit it with
CommitObject: each STREAM (an id or a name) gets one append of its file's bytes
at its committed end, and either every stream commits, at one metadata
version, or none does. The command registers the object version itself.

Each part holds --count offsets (default 1), or as many as its file has lines
with --count-lines; --count-of STREAM=N sets one part's. Streams without
--epoch-of STREAM=E are opened for write first, which bumps their writer epoch
and fences earlier writers. A refusal lists every refused stream and why;
nothing is committed then (exit 1; 3 for a stream that does not exist).`,
		Example: `  metad object commit orders=orders.bin payments=payments.bin --count 10 --object-dir ./metad-data/objects
  metad object commit 1=a.log 2=b.log --count-lines -o json
  metad object commit orders=o.bin --epoch-of orders=3 --count-of orders=100`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("%s: give at least one STREAM=FILE", cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			parts, err := parseObjectParts(args)
			if err != nil {
				return err
			}
			if err := setPartCounts(parts, count, countLines, cmd.Flags().Changed("count"), countOf); err != nil {
				return err
			}
			epochs, err := parsePerStream("--epoch-of", epochOf, parts)
			if err != nil {
				return err
			}
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				store, err := objects.open(ctx, cmd.Flags(), c)
				if err != nil {
					return err
				}
				// Everything that can fail for this command alone comes
				// before the streams are opened for write: each open bumps
				// a writer epoch, which a refused commit must not do.
				if err := findParts(ctx, c, parts); err != nil {
					return err
				}
				rid := client.NewRequestID()
				if key == "" {
					key = "objects/" + rid
				}
				var payload bytes.Buffer
				for _, p := range parts {
					payload.Write(p.data)
				}
				info, err := store.Put(ctx, key, bytes.NewReader(payload.Bytes()))
				if err != nil {
					return err
				}
				if err := openParts(ctx, c, parts, epochs); err != nil {
					return err
				}
				req := objectRequest(parts, &metadpb.ObjectRef{Key: info.Key, Identity: info.Identity}, uint64(info.Size), !noIndex, !noData)
				req.RequestId = rid
				resp, err := client.Call(ctx, c, c.Metad.CommitObject, req)
				if err != nil {
					return objectCommitError(o, cmd, parts, err)
				}
				return printObjectCommit(o, cmd, parts, req, resp)
			})
		},
	}
	cmd.Flags().Uint64Var(&count, "count", 1, "number of offsets each part holds")
	cmd.Flags().BoolVar(&countLines, "count-lines", false, "each part holds as many offsets as its file has lines")
	cmd.Flags().StringArrayVar(&countOf, "count-of", nil, "STREAM=N: the part of STREAM holds N offsets (repeatable)")
	cmd.Flags().StringArrayVar(&epochOf, "epoch-of", nil, "STREAM=E: append to STREAM at writer epoch E instead of opening it (repeatable)")
	cmd.Flags().StringVar(&key, "key", "", "the object's key in the store (default objects/<request id>)")
	objects.register(cmd.Flags())
	cmd.Flags().BoolVar(&noIndex, "no-index", false, "commit without generation-0 index records (repair will rebuild them)")
	cmd.Flags().BoolVar(&noData, "no-data-checksum", false, "commit without data checksums (readers read the bytes unchecked)")
	return cmd
}

// parseObjectParts parses STREAM=FILE arguments and reads the files. A
// stream named twice is refused: one append per stream.
func parseObjectParts(args []string) ([]*objectPart, error) {
	parts := make([]*objectPart, 0, len(args))
	seen := map[string]string{}
	for _, arg := range args {
		stream, file, ok := strings.Cut(arg, "=")
		if !ok || stream == "" || file == "" {
			return nil, usageError{fmt.Errorf("argument %q: want STREAM=FILE (a stream id or name, then a file)", arg)}
		}
		if prev, dup := seen[stream]; dup {
			return nil, usageError{fmt.Errorf("argument %q: stream %s is already given by %q; one file per stream", arg, stream, prev)}
		}
		seen[stream] = arg
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, usageError{fmt.Errorf("argument %q: %w", arg, err)}
		}
		if len(data) == 0 {
			return nil, usageError{fmt.Errorf("argument %q: file %s is empty; an append needs bytes", arg, file)}
		}
		parts = append(parts, &objectPart{arg: arg, stream: stream, file: file, data: data})
	}
	return parts, nil
}

// setPartCounts gives each part its count of offsets: --count-of, else
// its lines with --count-lines, else --count.
func setPartCounts(parts []*objectPart, count uint64, lines, countSet bool, countOf []string) error {
	if lines && countSet {
		return usageError{errors.New("--count and --count-lines: give one, not both")}
	}
	if !lines && count == 0 {
		return usageError{errors.New("--count 0: want a positive number of offsets")}
	}
	of, err := parsePerStream("--count-of", countOf, parts)
	if err != nil {
		return err
	}
	for _, p := range parts {
		switch n, ok := of[p.stream]; {
		case ok && n == 0:
			return usageError{fmt.Errorf("--count-of %s=0: want a positive number of offsets", p.stream)}
		case ok:
			p.count = n
		case lines:
			p.count = uint64(bytes.Count(p.data, []byte("\n")))
			if !bytes.HasSuffix(p.data, []byte("\n")) {
				p.count++ // a last line without its newline
			}
		default:
			p.count = count
		}
	}
	return nil
}

// parsePerStream parses repeated STREAM=N values of flag; every STREAM
// must be one of the parts, as given there.
func parsePerStream(flag string, values []string, parts []*objectPart) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, v := range values {
		stream, num, ok := strings.Cut(v, "=")
		n, err := strconv.ParseUint(num, 10, 64)
		if !ok || stream == "" || err != nil {
			return nil, usageError{fmt.Errorf("%s %q: want STREAM=N with N a non-negative integer", flag, v)}
		}
		found := false
		for _, p := range parts {
			found = found || p.stream == stream
		}
		if !found {
			return nil, usageError{fmt.Errorf("%s %q: stream %s is not one of the STREAM=FILE arguments", flag, v, stream)}
		}
		if _, dup := out[stream]; dup {
			return nil, usageError{fmt.Errorf("%s %q: stream %s is given twice", flag, v, stream)}
		}
		out[stream] = n
	}
	return out, nil
}

// findParts finds each part's stream (by id or name), refusing a stream
// given twice and a part whose offsets would run past the largest offset
// from the stream's committed end. Nothing changes: a missing stream or a
// refused count bumps no epoch.
func findParts(ctx context.Context, c *client.Client, parts []*objectPart) error {
	byID := map[uint64]*objectPart{}
	for _, p := range parts {
		desc, err := client.Call(ctx, c, c.Metad.DescribeStream, streamRequest(p.stream))
		if err != nil {
			return fmt.Errorf("argument %q: %w", p.arg, err)
		}
		p.id, p.name, p.epoch = desc.Stream.Id, desc.Stream.Name, desc.Stream.WriterEpoch
		if prev, dup := byID[p.id]; dup {
			return usageError{fmt.Errorf("argument %q: stream %d is already given by %q; one file per stream", p.arg, p.id, prev.arg)}
		}
		byID[p.id] = p
		if err := p.fits(desc.Stream.CommittedEnd); err != nil {
			return err
		}
	}
	return nil
}

// openParts gives each part its writer epoch (opening its stream for
// write unless epochs names one) and its committed end, where the append
// starts.
func openParts(ctx context.Context, c *client.Client, parts []*objectPart, epochs map[string]uint64) error {
	for _, p := range parts {
		if e, ok := epochs[p.stream]; ok {
			p.epoch = e
			continue
		}
		open, err := client.Call(ctx, c, c.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: p.id, RequestId: client.NewRequestID()})
		if err != nil {
			return fmt.Errorf("argument %q: opening stream %d for write: %w", p.arg, p.id, err)
		}
		p.epoch = open.WriterEpoch
	}
	// A writer fenced by an open may have appended in between: read the
	// ends after the last open.
	for _, p := range parts {
		desc, err := client.Call(ctx, c, c.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: p.id})
		if err != nil {
			return fmt.Errorf("argument %q: %w", p.arg, err)
		}
		p.start = desc.Stream.CommittedEnd
		if err := p.fits(p.start); err != nil {
			return err
		}
	}
	return nil
}

// fits refuses a part whose offsets, appended at end, would run past the
// largest offset a stream may have.
func (p *objectPart) fits(end uint64) error {
	if end > fsm.MaxOffset || p.count > fsm.MaxOffset-end {
		return usageError{fmt.Errorf("argument %q: %d offsets: stream %d's committed end is %d, and offsets end at %d",
			p.arg, p.count, p.id, end, fsm.MaxOffset)}
	}
	return nil
}

// objectRequest is the CommitObject of the parts, laid out in the object
// in argument order. Each data checksum is of the bytes as this command
// holds them, not as read back.
func objectRequest(parts []*objectPart, obj *metadpb.ObjectRef, size uint64, index, data bool) *metadpb.CommitObjectRequest {
	req := &metadpb.CommitObjectRequest{Object: obj, Size: size}
	var offset uint64
	for _, p := range parts {
		a := &metadpb.ObjectAppend{
			StreamId: p.id, WriterEpoch: p.epoch, ExpectedStart: p.start, End: p.start + p.count,
			Bytes: &metadpb.ByteRange{Offset: offset, Length: uint64(len(p.data))}, IndexGen0: index,
		}
		if data {
			a.DataCrc32C = checksum.Of(p.data).Ptr()
		}
		req.Appends = append(req.Appends, a)
		offset += uint64(len(p.data))
	}
	return req
}

// committedPart is one stream's line of `metad object commit`'s output.
type committedPart struct {
	Argument   string  `json:"argument"`
	Stream     uint64  `json:"stream"`
	Name       string  `json:"name"`
	Start      uint64  `json:"start"`
	End        uint64  `json:"end"`
	Epoch      uint64  `json:"writer_epoch"`
	Offset     uint64  `json:"byte_offset"`
	Length     uint64  `json:"byte_length"`
	DataCRC32C *string `json:"data_crc32c"`
}

type committedObject struct {
	Version   uint64          `json:"version"`
	Key       string          `json:"key"`
	Identity  string          `json:"identity"`
	Size      uint64          `json:"size"`
	RequestID string          `json:"request_id"`
	Appends   []committedPart `json:"appends"`
}

func printObjectCommit(o *clientOpts, cmd *cobra.Command, parts []*objectPart, req *metadpb.CommitObjectRequest, resp *metadpb.CommitObjectResponse) error {
	out := committedObject{Version: resp.Version, Key: req.Object.Key, Identity: req.Object.Identity, Size: req.Size, RequestID: req.RequestId}
	for i, a := range req.Appends {
		p := committedPart{Argument: parts[i].arg, Stream: a.StreamId, Name: parts[i].name, Start: a.ExpectedStart, End: a.End,
			Epoch: a.WriterEpoch, Offset: a.Bytes.Offset, Length: a.Bytes.Length}
		if i < len(resp.CommittedEnds) {
			p.End = resp.CommittedEnds[i]
		}
		if a.DataCrc32C != nil {
			s := checksum.FromPtr(a.DataCrc32C).String()
			p.DataCRC32C = &s
		}
		out.Appends = append(out.Appends, p)
	}
	return o.printJSON(cmd.OutOrStdout(), out, func(tw *tabwriter.Writer) {
		streams := "streams"
		if len(out.Appends) == 1 {
			streams = "stream"
		}
		fmt.Fprintf(tw, "object %s (%d bytes, identity %s) committed to %d %s at version %d\n\n",
			out.Key, out.Size, out.Identity, len(out.Appends), streams, out.Version)
		fmt.Fprintln(tw, "STREAM\tNAME\tOFFSETS\tBYTES\tEPOCH\tDATA")
		for i, p := range out.Appends {
			fmt.Fprintf(tw, "%d\t%s\t[%d,%d)\t%d+%d\t%d\t%s\n", p.Stream, p.Name, p.Start, p.End, p.Offset, p.Length, p.Epoch,
				dataColumn(req.Appends[i].DataCrc32C))
		}
	})
}

// refusedPart is one refused stream of a refused commit.
type refusedPart struct {
	Argument     string `json:"argument"`
	Stream       uint64 `json:"stream"`
	Reason       string `json:"reason"`
	Field        string `json:"field"`
	Message      string `json:"message"`
	CommittedEnd uint64 `json:"committed_end"`
	WriterEpoch  uint64 `json:"writer_epoch"`
}

// objectRefusedError is a refused commit, naming every refused stream; it
// unwraps to the client's error, which classifies the exit status.
type objectRefusedError struct {
	refused []refusedPart
	streams int // in the commit
	err     error
}

func (e *objectRefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "commit refused, nothing committed: %d of %d streams refused:", len(e.refused), e.streams)
	for _, r := range e.refused {
		fmt.Fprintf(&b, "\n  stream %d (argument %q): %s: %s", r.Stream, r.Argument, r.Reason, r.Message)
	}
	return b.String()
}

func (e *objectRefusedError) Unwrap() error { return e.err }

// objectCommitError turns a refused CommitObject into an error naming
// every refused stream by its argument (and, with -o json, prints them);
// any other failure is returned as it is.
func objectCommitError(o *clientOpts, cmd *cobra.Command, parts []*objectPart, err error) error {
	e, ok := client.AsError(err)
	if !ok || len(e.Appends) == 0 {
		return err
	}
	refused := &objectRefusedError{streams: len(parts), err: err}
	for _, a := range e.Appends {
		r := refusedPart{Stream: a.StreamId, Reason: a.Reason, Field: a.Field, Message: a.Message,
			CommittedEnd: a.CommittedEnd, WriterEpoch: a.WriterEpoch}
		if int(a.Index) < len(parts) {
			r.Argument = parts[a.Index].arg
		}
		refused.refused = append(refused.refused, r)
	}
	if o.output == "json" {
		if perr := writeJSON(cmd.OutOrStdout(), map[string]any{"refused": refused.refused}); perr != nil {
			return errors.Join(refused, perr)
		}
	}
	return refused
}
