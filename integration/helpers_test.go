package integration

import (
	"context"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/internal/proc"
)

// describe reads the stream through server i only.
func describe(t testing.TB, c *proc.Cluster, i int, stream uint64) (*metadpb.Stream, error) {
	cl := c.Client(i)
	resp, err := cl.Metad.DescribeStream(ctxT(t, 10*time.Second), &metadpb.DescribeStreamRequest{StreamId: stream})
	if err != nil {
		return nil, err
	}
	return resp.Stream, nil
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// voters counts leaders and voters in server i's status.
func roles(c *proc.Cluster, i int) (leaders, voters int, err error) {
	st, err := c.Status(i)
	if err != nil {
		return 0, 0, err
	}
	for _, n := range st.Nodes {
		if n.State == "Leader" {
			leaders++
		}
		if n.Voter {
			voters++
		}
	}
	return leaders, voters, nil
}
