package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/objectstore"
)

// registerObjectStoreFlags binds the object-store flags (DESIGN.md §11) to
// cfg: the same names on the server and on every command that reads or
// writes bytes, so one URL works everywhere.
func registerObjectStoreFlags(fs *pflag.FlagSet, cfg *objectstore.Config) {
	fs.StringVar(&cfg.URL, "object-store", cfg.URL, "object store URL: file://DIR or s3://BUCKET[/PREFIX] (credentials: the AWS SDK's default chain)")
	fs.StringVar(&cfg.S3.Endpoint, "s3-endpoint", cfg.S3.Endpoint, "S3 endpoint URL for an s3:// store (default: AWS's for the region)")
	fs.StringVar(&cfg.S3.Region, "s3-region", cfg.S3.Region, "S3 region (default: the AWS SDK's, else us-east-1)")
	fs.BoolVar(&cfg.S3.PathStyle, "s3-path-style", cfg.S3.PathStyle, "address the bucket in the URL path (most S3-compatible servers)")
	fs.StringVar(&cfg.S3.CAFile, "s3-ca-file", cfg.S3.CAFile, "PEM CA bundle to trust for an https S3 endpoint")
}

// clientObjectStore is the object store of a client command: --object-store,
// or --object-dir as its file:// alias.
type clientObjectStore struct {
	cfg objectstore.Config
	dir string
}

func (o *clientObjectStore) register(fs *pflag.FlagSet) {
	registerObjectStoreFlags(fs, &o.cfg)
	fs.StringVar(&o.dir, "object-dir", "./metad-data/objects", "local object store directory, an alias of --object-store file://DIR (the server's)")
}

// open opens the store the flags name.
func (o *clientObjectStore) open(ctx context.Context, fs *pflag.FlagSet) (objectstore.Store, error) {
	cfg := o.cfg
	if cfg.URL == "" {
		cfg.URL = objectstore.FileURL(o.dir)
	} else if fs.Changed("object-dir") {
		return nil, usageError{fmt.Errorf("--object-dir and --object-store: give one (object-dir is file://DIR)")}
	}
	if err := cfg.Validate(); err != nil {
		return nil, usageError{err}
	}
	return objectstore.Open(ctx, cfg)
}

func newReadCmd(o *clientOpts) *cobra.Command {
	var (
		objects clientObjectStore
		view    string
	)
	cmd := &cobra.Command{
		Use:   "read STREAM OFFSET",
		Short: "Read the bytes of the record holding an offset, as a broker does",
		Long: `Resolve (stream, view, offset), read the target's bytes from the object store
under the target's identity, and on a failed candidate (missing, replaced or
corrupt object) report it and fall back within the same view. The bytes go to
stdout as they are (-o json: the target, the fallbacks and the bytes in base64).
A boundary (EOF, OFFSET_TRIMMED, VIEW_END) is printed instead, on stderr.`,
		Example: `  metad read 1 0 --object-dir ./metad-data/objects
  metad read 1 0 --object-store s3://bucket/metad --s3-endpoint http://127.0.0.1:8333 --s3-path-style`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseUint("stream id", args[0])
			if err != nil {
				return err
			}
			off, err := parseUint("offset", args[1])
			if err != nil {
				return err
			}
			v, ok := metadpb.View_value[strings.ToUpper(view)]
			if !ok || v == 0 {
				return usageError{fmt.Errorf("--view %q: want COMMITTED or TOPIC_COMPACTED", view)}
			}
			if err := o.validate(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			store, err := objects.open(ctx, cmd.Flags())
			if err != nil {
				return err
			}
			c, err := client.New(client.Config{Addrs: strings.Split(o.addr, ","), Timeout: o.timeout, Holder: "metad-cli", Objects: store})
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.Read(ctx, id, metadpb.View(v), off)
			if err != nil {
				return err
			}
			return printRead(cmd, o, res)
		},
	}
	cmd.Flags().StringVar(&view, "view", "COMMITTED", "COMMITTED or TOPIC_COMPACTED")
	objects.register(cmd.Flags())
	return cmd
}

// readOutput is `metad read -o json`.
type readOutput struct {
	Outcome   string   `json:"outcome"`
	Object    string   `json:"object,omitempty"`
	Identity  string   `json:"identity,omitempty"`
	Data      []byte   `json:"data,omitempty"`
	Fallbacks []string `json:"fallbacks,omitempty"`
}

func printRead(cmd *cobra.Command, o *clientOpts, res *client.ReadResult) error {
	out := readOutput{Outcome: res.Outcome.String(), Data: res.Data}
	if res.Target != nil {
		out.Object, out.Identity = res.Target.Object.GetKey(), res.Target.Object.GetIdentity()
	}
	for _, f := range res.Fallbacks {
		out.Fallbacks = append(out.Fallbacks, fmt.Sprintf("%s %s: %v", f.Kind, f.Candidate.GetKey(), f.Err))
	}
	if o.output == "json" {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
		return err
	}
	for _, f := range out.Fallbacks {
		fmt.Fprintln(cmd.ErrOrStderr(), "fell back after", f)
	}
	if res.Outcome != metadpb.Outcome_TARGET {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s (committed end %d, trim %d)\n", res.Outcome, res.CommittedEnd, res.Trim)
		return nil
	}
	_, err := cmd.OutOrStdout().Write(res.Data)
	return err
}
