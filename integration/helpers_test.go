package integration

import (
	"context"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
)

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
