package integration

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/metad/metad/backup"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/internal/weedtest"
)

// TestScheduledBackupsToS3RestoreAsNewCluster: a 3-node cluster backs up
// every second to s3://backups/prod on a real weed mini, keeping 2. Only
// the leader backs up; when it stops, the new leader goes on. Once more
// than 2 backups were taken after the last acknowledged write, the bucket
// holds exactly 2 of them; the newest, restored from its s3:// URL into a
// new single server, is a cluster with a new id that holds every
// acknowledged write.
func TestScheduledBackupsToS3RestoreAsNewCluster(t *testing.T) {
	const retain = 2
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(t)
	w.Bucket(t, "metad", true)
	w.Bucket(t, "backups", true)
	c := proc.New(t, 3, "--backup-interval", "1s", "--backup-to", "s3://backups/prod", "--backup-retain", "2")
	for _, nd := range c.Nodes {
		nd.Args = append(withoutObjectDir(nd.Args), s3Flags(w)...)
	}
	sourceID := formedCluster(t, c)

	// Acknowledged writes, before and after the leader stops.
	var writers []*proc.Writer
	for _, name := range []string{"a", "b", "c"} {
		wr := proc.NewWriter(t, c.Client(), name)
		wr.MustAppend(t, 3)
		writers = append(writers, wr)
	}
	leader := c.WaitLeader(0)
	c.WaitFor("a backup by the first leader", time.Minute, func() bool { return backupsOK(c, leader) >= 1 })
	c.Stop(leader)
	survivor := (leader + 1) % 3
	newLeader := c.WaitLeader(survivor)
	cl := c.Client(survivor, (leader+2)%3)
	for _, wr := range writers {
		wr.Client = cl
		wr.MustAppend(t, 2)
	}
	st, err := c.Status(survivor)
	if err != nil {
		t.Fatal(err)
	}
	lastWrite := st.Nodes[0].AppliedIndex
	for _, n := range st.Nodes {
		lastWrite = max(lastWrite, n.AppliedIndex)
	}

	// At least retain+1 backups after the writes, and exactly retain kept.
	var kept []string
	c.WaitFor("retain+1 backups by the new leader after the writes, and the bucket pruned to retain", time.Minute, func() bool {
		if backupsOK(c, newLeader) < retain+1 {
			return false
		}
		kept = backupKeys(t, w)
		newest := backup.Newest(kept, sourceID)
		return len(kept) == retain && len(newest) == retain && newest[retain-1].Index >= lastWrite
	})
	for _, k := range kept {
		if e, _ := backup.Parse(k); e.ClusterID != sourceID {
			t.Fatalf("backup %s names cluster %s, want %s", k, e.ClusterID, sourceID)
		}
	}
	out, err := exec.Command(proc.Binary(t), append([]string{"snapshot", "list", "--from", "s3://backups/prod"}, s3Flags(w)[2:]...)...).CombinedOutput()
	if err != nil || strings.Count(string(out), "\nmetad-") != retain {
		t.Fatalf("snapshot list: %v\n%s", err, out)
	}
	// The restore replaces the source cluster (one GC per object store).
	c.KillAll()

	newest := backup.Newest(kept, sourceID)[0]
	r := proc.New(t, 1)
	rn := r.Nodes[0]
	rn.Args = append(withoutObjectDir(rn.Args), s3Flags(w)...)
	args := append([]string{"snapshot", "restore", "s3://backups/prod/" + newest.Name, "--data-dir", rn.DataDir,
		"--node-id", rn.ID, "--raft-addr", rn.Raft}, s3Flags(w)[2:]...)
	if out, err := exec.Command(proc.Binary(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	restoredID := formedCluster(t, r)
	if restoredID == sourceID {
		t.Fatalf("the restored cluster kept the source's id %s", sourceID)
	}
	for _, wr := range writers {
		s, err := r.Describe(0, wr.Stream)
		if err != nil {
			t.Fatalf("stream %d after restore: %v", wr.Stream, err)
		}
		if s.CommittedEnd != wr.End || s.WriterEpoch != wr.Epoch {
			t.Errorf("stream %d restored at end %d epoch %d; acknowledged end %d epoch %d", wr.Stream, s.CommittedEnd, s.WriterEpoch, wr.End, wr.Epoch)
		}
	}
}

// backupsOK is server i's count of verified backups (-1 if unknown).
func backupsOK(c *proc.Cluster, i int) int {
	return metricOn(c, i, `metad_backup_total{outcome="ok"}`)
}

// backupKeys lists every version of every object under backups/prod/,
// as keys relative to the prefix (a key with two versions shows twice).
func backupKeys(t *testing.T, w *weedtest.Server) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := w.Admin.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("backups"), Prefix: aws.String("prod/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, v := range out.Versions {
		keys = append(keys, strings.TrimPrefix(aws.ToString(v.Key), "prod/"))
	}
	slices.Sort(keys)
	return keys
}
