package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/cmd/internal/cliflags"
	"github.com/metad/metad/objectstore"
)

// clientObjectStore is the object store of a client command: --object-store,
// or --object-dir as its file:// alias (the flags metad-bench shares).
type clientObjectStore struct{ cliflags.ClientObjectStore }

func (o *clientObjectStore) register(fs *pflag.FlagSet) {
	o.Register(fs, "./metad-data/objects", "local object store directory, an alias of --object-store file://DIR (the server's)")
}

// open opens the servers' object store, so that what a command writes the
// servers can read and what it reads is theirs: the store the cluster
// reports (Cluster.Status), unless --object-store or --object-dir names
// one, which is refused if it is not the cluster's. A cluster from before
// the report leaves it to the flags (or their default directory).
func (o *clientObjectStore) open(ctx context.Context, fs *pflag.FlagSet, c *client.Client) (objectstore.Store, error) {
	explicit := fs.Changed("object-store") || fs.Changed("object-dir")
	st, err := client.Call(ctx, c, c.Cluster.Status, &metadpb.StatusRequest{})
	switch {
	case err != nil && !explicit:
		return nil, fmt.Errorf("asking the cluster where it keeps objects (or give --object-store): %w", err)
	case err != nil || st.ObjectStore == nil:
		return o.Open(ctx, fs)
	}
	reported := st.ObjectStore
	if explicit {
		if !sameStore(o.Describe(), reported.Url) {
			return nil, usageError{fmt.Errorf("%s names object store %s, but the cluster keeps its objects in %s: give that, or leave the flag out",
				o.flagName(fs), o.Describe(), reported.Url)}
		}
		return o.Open(ctx, fs)
	}
	cfg := o.Config
	cfg.URL = reported.Url
	if !fs.Changed("s3-endpoint") {
		cfg.S3.Endpoint = reported.S3Endpoint
	}
	if !fs.Changed("s3-region") {
		cfg.S3.Region = reported.S3Region
	}
	if !fs.Changed("s3-path-style") {
		cfg.S3.PathStyle = reported.S3PathStyle
	}
	return cliflags.OpenConfig(ctx, cfg)
}

func (o *clientObjectStore) flagName(fs *pflag.FlagSet) string {
	if fs.Changed("object-store") {
		return "--object-store"
	}
	return "--object-dir"
}

// sameStore reports whether two object store URLs name one store: the
// same directory (however spelled, symlinks included), or the same
// bucket and prefix.
func sameStore(a, b string) bool {
	da, fileA := strings.CutPrefix(a, "file://")
	db, fileB := strings.CutPrefix(b, "file://")
	switch {
	case fileA != fileB:
		return false
	case !fileA:
		return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
	}
	if fa, err := os.Stat(da); err == nil {
		if fb, err := os.Stat(db); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	absA, errA := filepath.Abs(da)
	absB, errB := filepath.Abs(db)
	return errA == nil && errB == nil && absA == absB
}

// The object commands are thin wrappers over the registry's RPCs, for
// operators who would otherwise need grpcurl.
func newObjectCmd(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{Use: "object", Short: "Describe, register, commit, pin and release objects; report failed candidates"}
	cmd.AddCommand(newObjectDescribeCmd(o), newObjectRegisterCmd(o), newObjectCommitCmd(o), newObjectPinCmd(o),
		newObjectReleaseCmd(o), newObjectReportCmd(o))
	return cmd
}

func newObjectDescribeCmd(o *clientOpts) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "describe KEY",
		Short: "Show a registered object's versions: identity, size, status, references and pins",
		Long: `Show every version of an object the registry holds. A key has one version
per identity registered under it (a re-uploaded key has many); each is
referenced, pinned and garbage-collected on its own. The newest, the last
registered, is marked *. On a cluster below feature level 3 a key has one.`,
		Example: `  metad object describe streams/1/00000000000000000000-00000000000000000001`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				return callPrint(ctx, o, cmd, c, c.Metad.DescribeObject, &metadpb.DescribeObjectRequest{Key: args[0], Consistency: consistency(stale)}, func(tw *tabwriter.Writer, resp *metadpb.DescribeObjectResponse) {
					versions := resp.Versions
					if len(versions) == 0 { // a server from before versions
						versions = []*metadpb.Object{resp.Object}
					}
					fmt.Fprintf(tw, "key\t%s\nversions\t%d\nread at index\t%d\n\n", resp.Object.Ref.GetKey(), len(versions), resp.AppliedIndex)
					fmt.Fprintln(tw, "\tIDENTITY\tSIZE\tSTATUS\tREFERENCES\tPINS\tVERSION")
					for _, ob := range versions {
						newest := ""
						if ob.Ref.GetIdentity() == resp.Object.Ref.GetIdentity() {
							newest = "*"
						}
						fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%d\n", newest, ob.Ref.GetIdentity(), ob.Size,
							strings.TrimPrefix(ob.Status.String(), "OBJECT_STATUS_"), ob.References, ob.Pins, ob.Version)
					}
				})
			})
		},
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read the answering node's local state (may lag)")
	return cmd
}

func newObjectRegisterCmd(o *clientOpts) *cobra.Command {
	var identity string
	var size uint64
	cmd := &cobra.Command{
		Use:   "register KEY --identity ID --size N",
		Short: "Register an object already written to the object store",
		Long: `Register an object (key, identity, size) so that appends and index records may
reference it. Registering the same object again is a no-op; the identity is the
object store's (for the file store: the hex SHA-256 of the bytes).`,
		Example: `  metad object register seg-1 --identity 9f86d081... --size 4096`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if identity == "" {
				return usageError{fmt.Errorf("--identity: required")}
			}
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				return callPrint(ctx, o, cmd, c, c.Metad.RegisterObject, &metadpb.RegisterObjectRequest{
					Object: &metadpb.ObjectRef{Key: args[0], Identity: identity}, Size: size, RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.RegisterObjectResponse) {
					fmt.Fprintf(tw, "registered %s (version %d)\n", args[0], resp.Version)
				})
			})
		},
	}
	cmd.Flags().StringVar(&identity, "identity", "", "the object's identity in the object store (required)")
	cmd.Flags().Uint64Var(&size, "size", 0, "the object's size in bytes")
	return cmd
}

func newObjectPinCmd(o *clientOpts) *cobra.Command {
	var identity, holder string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "pin KEY",
		Short: "Pin an object so garbage collection keeps it until the pin expires or is released",
		Long: `Take a lease on an object: GC does not delete it while the pin lives. Without
--identity the registered identity is looked up first.`,
		Example: `  metad object pin seg-1 --ttl 5m --holder backup-job`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl <= 0 {
				return usageError{fmt.Errorf("--ttl %v: want a positive duration", ttl)}
			}
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				id := identity
				if id == "" {
					obj, err := client.Call(ctx, c, c.Metad.DescribeObject, &metadpb.DescribeObjectRequest{Key: args[0]})
					if err != nil {
						return err
					}
					id = obj.Object.Ref.GetIdentity()
				}
				return callPrint(ctx, o, cmd, c, c.Metad.Pin, &metadpb.PinRequest{Object: &metadpb.ObjectRef{Key: args[0], Identity: id},
					Holder: holder, Ttl: durationpb.New(ttl), RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.PinResponse) {
					fmt.Fprintf(tw, "pin %d until %s (version %d)\n", resp.PinId, resp.Expiry.AsTime().Format(time.RFC3339), resp.Version)
				})
			})
		},
	}
	cmd.Flags().StringVar(&identity, "identity", "", "the object's identity (default: the registered one)")
	cmd.Flags().StringVar(&holder, "holder", "metad-cli", "who holds the pin (shown in the pin table)")
	cmd.Flags().DurationVar(&ttl, "ttl", 30*time.Second, "how long the pin lives")
	return cmd
}

func newObjectReleaseCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:     "release PIN",
		Short:   "Release a pin before it expires",
		Example: `  metad object release 42`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pin, err := parseUint("pin id", args[0])
			if err != nil {
				return err
			}
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				return callPrint(ctx, o, cmd, c, c.Metad.ReleasePin, &metadpb.ReleasePinRequest{PinId: pin, RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.ReleasePinResponse) {
					fmt.Fprintf(tw, "released pin %d (version %d)\n", pin, resp.Version)
				})
			})
		},
	}
}

func newObjectReportCmd(o *clientOpts) *cobra.Command {
	var kind, detail string
	cmd := &cobra.Command{
		Use:   "report STREAM VIEW GENERATION/START@VERSION --kind KIND",
		Short: "Report a candidate whose bytes could not be read (ReportCandidateFailure)",
		Long: `Tell the cluster a resolve candidate failed, as a broker's read path does.
IDENTITY_MISMATCH, OBJECT_MISSING and CORRUPT are permanent: the record is
quarantined and repair rebuilds it. IO_ERROR is transient: recorded, nothing
changes.`,
		Example: `  metad object report 1 COMMITTED 0/0@12 --kind OBJECT_MISSING --detail 'deleted by hand'`,
		Args:    exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			view, err := parseView(args[1])
			if err != nil {
				return err
			}
			ref, err := parseCandidate(0, view, args[2]) // the stream's id once known
			if err != nil {
				return usageError{err}
			}
			k, ok := metadpb.FailureKind_value[strings.ToUpper(kind)]
			if !ok || k == 0 {
				return usageError{fmt.Errorf("--kind %q: want IDENTITY_MISMATCH, OBJECT_MISSING, CORRUPT or IO_ERROR", kind)}
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				ref.Key.StreamId = id
				return callPrint(ctx, o, cmd, c, c.Metad.ReportCandidateFailure, &metadpb.ReportCandidateFailureRequest{
					Candidate: ref, Kind: metadpb.FailureKind(k), Detail: detail, RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.ReportCandidateFailureResponse) {
					fmt.Fprintf(tw, "reported %s; quarantined %v (version %d)\n", candidateName(ref), resp.Quarantined, resp.Version)
				})
			})
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "IDENTITY_MISMATCH, OBJECT_MISSING, CORRUPT or IO_ERROR (required)")
	cmd.Flags().StringVar(&detail, "detail", "", "what went wrong, for the log")
	return cmd
}

func newEvidenceCmd(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{Use: "evidence", Short: "List a stream's append evidence"}
	var from uint64
	var limit uint32
	var stale bool
	list := &cobra.Command{
		Use:   "list STREAM",
		Short: "List the append evidence of a stream: which object holds which offsets",
		Long: `List the append evidence of a stream: for each committed append, the offsets,
the object and byte range that hold them, the writer epoch, and the data
checksum of the bytes ("none (unchecked)" for appends from before data
checksums). Repair rebuilds generation 0 of the index from it.`,
		Example: `  metad evidence list 1 --from 100 --limit 10`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				return callPrint(ctx, o, cmd, c, c.Metad.ListEvidence, &metadpb.ListEvidenceRequest{StreamId: id, From: from, Limit: limit, Consistency: consistency(stale)}, func(tw *tabwriter.Writer, resp *metadpb.ListEvidenceResponse) {
					fmt.Fprintln(tw, "START\tEND\tOBJECT\tBYTES\tEPOCH\tVERSION\tDATA")
					for _, e := range resp.Evidence {
						fmt.Fprintf(tw, "%d\t%d\t%s\t%d+%d\t%d\t%d\t%s\n", e.Range.GetStart(), e.Range.GetEnd(), e.Object.GetKey(),
							e.Bytes.GetOffset(), e.Bytes.GetLength(), e.WriterEpoch, e.Version, dataColumn(e.DataCrc32C))
					}
				})
			})
		},
	}
	list.Flags().Uint64Var(&from, "from", 0, "evidence ending after this offset")
	list.Flags().Uint32Var(&limit, "limit", 100, "at most this many")
	list.Flags().BoolVar(&stale, "stale", false, "read the answering node's local state (may lag)")
	cmd.AddCommand(list)
	return cmd
}

func consistency(stale bool) metadpb.Consistency {
	if stale {
		return metadpb.Consistency_STALE
	}
	return metadpb.Consistency_LINEARIZABLE
}

// parseView accepts COMMITTED or TOPIC_COMPACTED, in any case.
func parseView(s string) (metadpb.View, error) {
	v, ok := metadpb.View_value[strings.ToUpper(s)]
	if !ok || v == 0 {
		return 0, usageError{fmt.Errorf("view %q: want COMMITTED or TOPIC_COMPACTED", s)}
	}
	return metadpb.View(v), nil
}

func newStreamDeleteCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:     "delete STREAM",
		Short:   "Delete a stream; its objects become garbage once unreferenced",
		Example: `  metad stream delete 1`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				return callPrint(ctx, o, cmd, c, c.Metad.DeleteStream, &metadpb.DeleteStreamRequest{StreamId: id, RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.DeleteStreamResponse) {
					fmt.Fprintf(tw, "deleted stream %d (version %d)\n", id, resp.Version)
				})
			})
		},
	}
}

func newIndexRetireCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:     "retire STREAM VIEW GENERATION",
		Short:   "Retire an index generation: resolves stop using it",
		Example: `  metad index retire 1 COMMITTED 1`,
		Args:    exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			view, err := parseView(args[1])
			if err != nil {
				return err
			}
			gen, err := parseUint("generation", args[2])
			if err != nil {
				return err
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				return callPrint(ctx, o, cmd, c, c.Metad.RetireGeneration, &metadpb.RetireGenerationRequest{StreamId: id, View: view, Generation: gen, RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.RetireGenerationResponse) {
					fmt.Fprintf(tw, "retired generation %d of %s (version %d)\n", gen, view, resp.Version)
				})
			})
		},
	}
}
