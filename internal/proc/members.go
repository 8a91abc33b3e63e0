package proc

import (
	"io"
	"net/http"
	"time"
)

// WaitFormed waits until every server reports one leader and n voters.
func (c *Cluster) WaitFormed(n int) {
	c.t.Helper()
	c.WaitFor("one leader and all voters", 30*time.Second, func() bool {
		for i := range c.Nodes {
			if l, v, err := c.Roles(i); err != nil || l != 1 || v != n {
				return false
			}
		}
		return true
	})
}

// Roles counts the leaders and the voters in server i's status.
func (c *Cluster) Roles(i int) (leaders, voters int, err error) {
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

// Member reports whether node id is in the configuration server i
// reports, and whether as a voter.
func (c *Cluster) Member(i int, id string) (present, voter bool, err error) {
	st, err := c.Status(i)
	if err != nil {
		return false, false, err
	}
	for _, n := range st.Nodes {
		if n.NodeId == id {
			return true, n.Voter, nil
		}
	}
	return false, false, nil
}

// Readyz returns server i's /readyz status code and body (code 0 and the
// error when it does not answer).
func (c *Cluster) Readyz(i int) (int, string) {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + c.Nodes[i].HTTP + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
