package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/objectstore"
)

func newAppendCmd(o *clientOpts) *cobra.Command {
	var (
		epoch   uint64
		count   uint64
		data    string
		file    string
		objects clientObjectStore
		noIndex bool
	)
	cmd := &cobra.Command{
		Use:   "append STREAM",
		Short: "Write bytes to the object store and commit them as the next offsets of a stream",
		Long: `Write bytes to the object store (--object-store, the servers' URL), register
the object, and commit an append of --count offsets at the stream's committed
end (with its generation-0 index record unless --no-index). Without --epoch the command opens the stream
for write first, which bumps the writer epoch and fences earlier writers.`,
		Example: `  metad append 1 --data 'hello' --object-dir ./metad-data/objects
  metad append 1 --file batch.bin --count 100 --epoch 3
  metad append 1 --data 'hello' --object-store s3://bucket/metad --s3-endpoint http://127.0.0.1:8333 --s3-path-style`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			if data != "" && file != "" {
				return usageError{errors.New("--data and --file: give one, not both")}
			}
			payload := []byte(data)
			if file != "" {
				var err error
				if payload, err = os.ReadFile(file); err != nil {
					return usageError{fmt.Errorf("--file: %w", err)}
				}
			}
			if len(payload) == 0 || count == 0 {
				return usageError{fmt.Errorf("give a non-empty --data or --file and a positive --count")}
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				store, err := objects.open(ctx, cmd.Flags(), c)
				if err != nil {
					return err
				}
				resp, err := appendBytes(ctx, c, store, id, epoch, count, payload, !noIndex)
				if err != nil {
					return err
				}
				return o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) {
					fmt.Fprintf(tw, "committed end %d (version %d)\n", resp.CommittedEnd, resp.Version)
				})
			})
		},
	}
	cmd.Flags().Uint64Var(&epoch, "epoch", 0, "writer epoch (default: open the stream for write to get a new one)")
	cmd.Flags().Uint64Var(&count, "count", 1, "number of offsets the bytes hold")
	cmd.Flags().StringVar(&data, "data", "", "the bytes, as a string")
	cmd.Flags().StringVar(&file, "file", "", "read the bytes from this file")
	objects.register(cmd.Flags())
	cmd.Flags().BoolVar(&noIndex, "no-index", false, "commit without the generation-0 index record (repair will rebuild it)")
	return cmd
}

// appendBytes is the whole write path of a broker in one place. Everything
// that can fail for this command alone (the offsets, the object store, the
// registration) comes before the stream is opened for write: the open
// bumps the writer epoch and fences the stream's writer, which an append
// that then fails must not do for nothing.
func appendBytes(ctx context.Context, c *client.Client, store objectstore.Store, stream, epoch, count uint64, payload []byte, index bool) (*metadpb.CommitAppendResponse, error) {
	start, err := appendStart(ctx, c, stream, count)
	if err != nil {
		return nil, err
	}
	obj, size, err := putAppendObject(ctx, c, store, stream, start, count, payload)
	if err != nil {
		return nil, err
	}
	if epoch == 0 {
		open, err := client.Call(ctx, c, c.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: stream, RequestId: client.NewRequestID()})
		if err != nil {
			return nil, err
		}
		epoch = open.WriterEpoch
		// A writer fenced by the open may have appended in between: the
		// append starts at the end after it, under a key that says so (the
		// object put first is unreferenced, and GC deletes it).
		moved, err := appendStart(ctx, c, stream, count)
		if err != nil {
			return nil, err
		}
		if moved != start {
			start = moved
			if obj, size, err = putAppendObject(ctx, c, store, stream, start, count, payload); err != nil {
				return nil, err
			}
		}
	}
	// The data checksum is of the bytes as this writer holds them, not as
	// read back: a reader checks the store against what was meant.
	return client.Call(ctx, c, c.Metad.CommitAppend, &metadpb.CommitAppendRequest{
		StreamId: stream, WriterEpoch: epoch, ExpectedStart: start, End: start + count, Object: obj,
		Bytes: &metadpb.ByteRange{Offset: 0, Length: size}, IndexGen0: index, RequestId: client.NewRequestID(),
		DataCrc32C: checksum.Of(payload).Ptr(),
	})
}

// putAppendObject puts the bytes of an append of count offsets at start
// into the store and registers the object.
func putAppendObject(ctx context.Context, c *client.Client, store objectstore.Store, stream, start, count uint64, payload []byte) (*metadpb.ObjectRef, uint64, error) {
	key := fmt.Sprintf("streams/%d/%020d-%020d", stream, start, start+count)
	info, err := store.Put(ctx, key, bytes.NewReader(payload))
	if err != nil {
		return nil, 0, err
	}
	obj := &metadpb.ObjectRef{Key: info.Key, Identity: info.Identity}
	if _, err := client.Call(ctx, c, c.Metad.RegisterObject, &metadpb.RegisterObjectRequest{Object: obj, Size: uint64(info.Size), RequestId: client.NewRequestID()}); err != nil {
		return nil, 0, err
	}
	return obj, uint64(info.Size), nil
}

// appendStart returns the stream's committed end, where an append of
// count offsets would start, refusing a count that would run past the
// largest offset.
func appendStart(ctx context.Context, c *client.Client, stream, count uint64) (uint64, error) {
	desc, err := client.Call(ctx, c, c.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: stream})
	if err != nil {
		return 0, err
	}
	end := desc.Stream.CommittedEnd
	if end > fsm.MaxOffset || count > fsm.MaxOffset-end {
		return 0, usageError{fmt.Errorf("--count %d: the stream's committed end is %d, and offsets end at %d", count, end, fsm.MaxOffset)}
	}
	return end, nil
}

func newIndexCmd(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{Use: "index", Short: "Publish, list and retire index generations"}
	cmd.AddCommand(newIndexPublishCmd(o), newIndexListCmd(o), newIndexRetireCmd(o))
	return cmd
}

func newIndexPublishCmd(o *clientOpts) *cobra.Command {
	var (
		view       string
		generation uint64
		epoch      uint64
		coverage   string
		records    []string
		building   bool
		objects    clientObjectStore
		noData     bool
	)
	cmd := &cobra.Command{
		Use:   "publish STREAM",
		Short: "Publish an index generation (checksums computed here, identities looked up)",
		Long: `Publish generation --generation of one view of a stream. Each --record is
START-END@KEY[/OFFSET+LENGTH] for COMMITTED, or START-END;S1-E1,S2-E2@KEY[/OFFSET+LENGTH]
for TOPIC_COMPACTED (the span, then the surviving sub-ranges). The object's
identity is looked up in the registry and the record's checksum computed.
Each record's data checksum (the CRC-32C of its byte range, which readers check)
is computed from the bytes in the object store (--object-store, the servers'
URL, or --object-dir); --no-data-checksum publishes without one, read unchecked.`,
		Example: `  metad index publish 1 --view COMMITTED --generation 1 --coverage 0-100 --record '0-100@seg-1/0+4096'
  metad index publish 1 --view TOPIC_COMPACTED --generation 1 --coverage 0-100 --record '0-100;3-4,50-52@seg-1'`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			v, ok := metadpb.View_value[strings.ToUpper(view)]
			if !ok || v == 0 {
				return usageError{fmt.Errorf("--view %q: want COMMITTED or TOPIC_COMPACTED", view)}
			}
			cov, err := parseRange(coverage)
			if err != nil {
				return usageError{fmt.Errorf("--coverage: %w", err)}
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				req := &metadpb.PublishGenerationRequest{StreamId: id, View: metadpb.View(v), Generation: generation,
					WriterEpoch: epoch, Coverage: &metadpb.Range{Start: cov.Start, End: cov.End}, Complete: !building,
					RequestId: client.NewRequestID()}
				var store objectstore.Store
				if len(records) > 0 && !noData {
					if store, err = objects.open(ctx, cmd.Flags(), c); err != nil {
						return err
					}
				}
				if err := buildRecords(ctx, c, store, req, records); err != nil {
					return err
				}
				return callPrint(ctx, o, cmd, c, c.Metad.PublishGeneration, req, func(tw *tabwriter.Writer, resp *metadpb.PublishGenerationResponse) {
					fmt.Fprintf(tw, "generation %d published (version %d)\n", resp.Generation, resp.Version)
				})
			})
		},
	}
	cmd.Flags().StringVar(&view, "view", "COMMITTED", "COMMITTED or TOPIC_COMPACTED")
	cmd.Flags().Uint64Var(&generation, "generation", 1, "generation number (larger than any before)")
	cmd.Flags().Uint64Var(&epoch, "epoch", 0, "writer epoch (default: the stream's current one)")
	cmd.Flags().StringVar(&coverage, "coverage", "", "START-END the generation speaks for")
	cmd.Flags().StringArrayVar(&records, "record", nil, "a record (repeatable), see above")
	cmd.Flags().BoolVar(&building, "part", false, "publish as a part; a later publish completes it")
	objects.register(cmd.Flags())
	cmd.Flags().BoolVar(&noData, "no-data-checksum", false, "publish records without a data checksum (readers read them unchecked)")
	return cmd
}

// buildRecords parses --record specs, fills identities from the registry
// and the writer epoch from the stream, and computes checksums: the data
// checksum from the bytes in store (none when store is nil), and the
// record checksum over the canonical fields and it.
func buildRecords(ctx context.Context, c *client.Client, store objectstore.Store, req *metadpb.PublishGenerationRequest, specs []string) error {
	if req.WriterEpoch == 0 {
		desc, err := client.Call(ctx, c, c.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: req.StreamId})
		if err != nil {
			return err
		}
		req.WriterEpoch = desc.Stream.WriterEpoch
	}
	for _, spec := range specs {
		rng, survivors, key, br, err := parseRecord(spec)
		if err != nil {
			return usageError{fmt.Errorf("--record %q: %w", spec, err)}
		}
		obj, err := client.Call(ctx, c, c.Metad.DescribeObject, &metadpb.DescribeObjectRequest{Key: key})
		if err != nil {
			return err
		}
		ref := fsm.ObjectRef{Key: key, Identity: obj.Object.Ref.Identity}
		if br.Length == 0 {
			br.Length = obj.Object.Size
		}
		var surv []*metadpb.Range
		for _, s := range survivors {
			surv = append(surv, &metadpb.Range{Start: s.Start, End: s.End})
		}
		var data checksum.Data
		if store != nil {
			// Unchecked read: this is where the checksum comes from. The
			// identity still names the exact version registered.
			b, err := objectstore.ReadRange(ctx, store, ref.Key, ref.Identity, int64(br.Offset), int64(br.Length), checksum.Data{})
			if err != nil {
				return fmt.Errorf("--record %q: reading its bytes for the data checksum (or give --no-data-checksum): %w", spec, err)
			}
			data = checksum.Of(b)
		}
		rec := &metadpb.IndexRecord{
			Range: &metadpb.Range{Start: rng.Start, End: rng.End}, Survivors: surv,
			Object:     &metadpb.ObjectRef{Key: ref.Key, Identity: ref.Identity},
			Bytes:      &metadpb.ByteRange{Offset: br.Offset, Length: br.Length},
			DataCrc32C: data.Ptr(),
		}
		rec.Checksum = client.RecordChecksum(req.StreamId, req.View, req.Generation, rec)
		req.Records = append(req.Records, rec)
	}
	return nil
}

// parseRecord parses START-END[;S-E,S-E]@KEY[/OFF+LEN].
func parseRecord(spec string) (fsm.Range, []fsm.Range, string, fsm.ByteRange, error) {
	ranges, rest, ok := strings.Cut(spec, "@")
	if !ok {
		return fsm.Range{}, nil, "", fsm.ByteRange{}, fmt.Errorf("missing @KEY")
	}
	span, survSpec, _ := strings.Cut(ranges, ";")
	rng, err := parseRange(span)
	if err != nil {
		return fsm.Range{}, nil, "", fsm.ByteRange{}, err
	}
	var survivors []fsm.Range
	if survSpec != "" {
		for _, s := range strings.Split(survSpec, ",") {
			r, err := parseRange(s)
			if err != nil {
				return fsm.Range{}, nil, "", fsm.ByteRange{}, err
			}
			survivors = append(survivors, r)
		}
	}
	var br fsm.ByteRange
	key := rest
	if i := strings.LastIndex(rest, "/"); i >= 0 && strings.Contains(rest[i:], "+") {
		key = rest[:i]
		if _, err := fmt.Sscanf(rest[i+1:], "%d+%d", &br.Offset, &br.Length); err != nil {
			return fsm.Range{}, nil, "", fsm.ByteRange{}, fmt.Errorf("byte range %q: want OFFSET+LENGTH", rest[i+1:])
		}
	}
	return rng, survivors, key, br, nil
}

func parseRange(s string) (fsm.Range, error) {
	var r fsm.Range
	if _, err := fmt.Sscanf(s, "%d-%d", &r.Start, &r.End); err != nil || r.Start >= r.End {
		return r, fmt.Errorf("range %q: want START-END with START < END", s)
	}
	return r, nil
}

func newIndexListCmd(o *clientOpts) *cobra.Command {
	var (
		view       string
		generation uint64
		from       uint64
		limit      uint32
	)
	cmd := &cobra.Command{
		Use:     "list STREAM",
		Short:   "List the records of one generation",
		Example: `  metad index list 1 --view COMMITTED --generation 0`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			v, ok := metadpb.View_value[strings.ToUpper(view)]
			if !ok || v == 0 {
				return usageError{fmt.Errorf("--view %q: want COMMITTED or TOPIC_COMPACTED", view)}
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				return callPrint(ctx, o, cmd, c, c.Metad.ListIndex, &metadpb.ListIndexRequest{StreamId: id, View: metadpb.View(v), Generation: generation, From: from, Limit: limit}, func(tw *tabwriter.Writer, resp *metadpb.ListIndexResponse) {
					fmt.Fprintln(tw, "START\tEND\tSURVIVORS\tSTATUS\tVERSION\tOBJECT\tBYTES\tCHECKSUM\tDATA")
					for _, r := range resp.Records {
						rec := r.Record
						fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d\t%s\t%d+%d\t%08x\t%s\n", rec.Range.Start, rec.Range.End, len(rec.Survivors),
							r.Status, r.Version, rec.Object.Key, rec.Bytes.Offset, rec.Bytes.Length, rec.Checksum, dataColumn(rec.DataCrc32C))
					}
				})
			})
		},
	}
	cmd.Flags().StringVar(&view, "view", "COMMITTED", "COMMITTED or TOPIC_COMPACTED")
	cmd.Flags().Uint64Var(&generation, "generation", 0, "generation number")
	cmd.Flags().Uint64Var(&from, "from", 0, "records ending after this offset")
	cmd.Flags().Uint32Var(&limit, "limit", 100, "at most this many")
	return cmd
}

// dataColumn is a record's data checksum as `metad index list` shows it:
// crc32c:xxxxxxxx, or that a record from before data checksums is read
// unchecked.
func dataColumn(crc *uint32) string {
	if crc == nil {
		return "none (unchecked)"
	}
	return checksum.FromPtr(crc).String()
}
