package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/version"
)

// chromiumPath is Debian's headless-capable browser (package chromium).
const chromiumPath = "/usr/bin/chromium"

// TestStatusPageInChromium starts three servers, creates two streams, and
// loads a follower's admin page / in headless Chromium: the DOM after load
// names the leader, every server with its state, the release and the
// stream count; other paths stay 404.
func TestStatusPageInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("headless Chromium is needed at %s (%v): apt-get install chromium", chromiumPath, err)
	}
	c := proc.New(t, 3)
	c.StartAll()
	var leader int
	c.WaitFor("a leader", 30*time.Second, func() bool { leader = c.Leader(0); return leader >= 0 })
	cl := c.Client()
	ctx := ctxT(t, 30*time.Second)
	for _, name := range []string{"page-a", "page-b"} {
		if _, err := client.Call(ctx, cl, cl.Metad.CreateStream,
			&metadpb.CreateStreamRequest{Name: name, RequestId: client.NewRequestID()}); err != nil {
			t.Fatalf("create stream %s: %v", name, err)
		}
	}
	follower := (leader + 1) % 3
	url := "http://" + c.Nodes[follower].HTTP + "/"
	// Plain GETs until the follower has applied both streams and sees all
	// three servers; then one browser load, whose DOM is what is checked.
	c.WaitFor("the page to show 2 streams and 3 reachable servers", 30*time.Second, func() bool {
		doc, err := getPage(url)
		if err != nil {
			return false
		}
		p := readStatusPage(doc)
		return p.streams == "2" && len(p.servers) == 3 && !slices.Contains(p.states(), "UNREACHABLE") &&
			clusterIDPattern.MatchString(p.clusterID)
	})
	st, err := client.Call(ctx, cl, cl.Cluster.Status, &metadpb.StatusRequest{})
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	dom := dumpDOM(t, url)
	p := readStatusPage(dom)
	leaderID := c.Nodes[leader].ID
	checks := []struct{ what, got, want string }{
		{"#node-id", p.nodeID, c.Nodes[follower].ID},
		{"#leader", p.leader, leaderID},
		{"#release", p.release, version.Release},
		{"#streams", p.streams, "2"},
		{"#cluster-id", p.clusterID, st.ClusterId},
		{"#error", p.err, ""},
		{"server ids", strings.Join(p.ids(), ","), "n1,n2,n3"},
		{"server states", strings.Join(p.states(), ","), statesWant(c, leader)},
		{"newest leader change", p.lastChange, leaderID},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s in Chromium's DOM = %q, want %q", ch.what, ch.got, ch.want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
	// Every node records the cluster id in its data dir.
	c.WaitFor("every data dir to record the cluster id", 30*time.Second, func() bool {
		for _, n := range c.Nodes {
			b, err := os.ReadFile(filepath.Join(n.DataDir, "cluster-id"))
			if err != nil || strings.TrimSpace(string(b)) != st.ClusterId {
				return false
			}
		}
		return true
	})
	// Only / itself is the page: other unknown paths stay 404.
	if _, err := getPage(url + "no-such-page"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("GET /no-such-page: %v, want 404 Not Found", err)
	}
}

// clusterIDPattern is a cluster id as a new cluster makes it: 128 bits, hex.
var clusterIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// statesWant is each server's expected state, in node id order.
func statesWant(c *proc.Cluster, leader int) string {
	var s []string
	for i := range c.Nodes {
		if i == leader {
			s = append(s, "Leader")
		} else {
			s = append(s, "Follower")
		}
	}
	return strings.Join(s, ",")
}

func getPage(url string) ([]byte, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// dumpDOM loads url in headless Chromium and returns the DOM after load.
// Chromium and every process it started are killed when it returns.
func dumpDOM(t *testing.T, url string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromiumPath, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--user-data-dir="+t.TempDir(), "--dump-dom", url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the renderer and helpers too
	}
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", url, err, stderr.String())
	}
	return out
}

// pageView is what the test reads from the page, by element id and class.
type pageView struct {
	nodeID, leader, release, streams, err string
	clusterID                             string
	servers                               []pageRow
	lastChange                            string // the newest leader change's leader
}

type pageRow struct{ id, state string }

func (p pageView) ids() []string {
	var s []string
	for _, sv := range p.servers {
		s = append(s, sv.id)
	}
	return s
}

func (p pageView) states() []string {
	var s []string
	for _, sv := range p.servers {
		s = append(s, sv.state)
	}
	return s
}

func readStatusPage(doc []byte) pageView {
	root, err := html.Parse(bytes.NewReader(doc))
	if err != nil {
		return pageView{err: "unparsable: " + err.Error()}
	}
	byID := func(id string) string {
		if n := domFind(root, func(n *html.Node) bool { return domAttr(n, "id") == id }); n != nil {
			return domText(n)
		}
		return ""
	}
	p := pageView{nodeID: byID("node-id"), leader: byID("leader"), release: byID("release"),
		streams: byID("streams"), err: byID("error"), clusterID: byID("cluster-id")}
	for _, row := range domFindAll(root, func(n *html.Node) bool { return domHasClass(n, "server") }) {
		cell := func(class string) string {
			if n := domFind(row, func(n *html.Node) bool { return domHasClass(n, class) }); n != nil {
				return domText(n)
			}
			return ""
		}
		p.servers = append(p.servers, pageRow{id: cell("node-id"), state: cell("state")})
	}
	if changes := domFind(root, func(n *html.Node) bool { return domAttr(n, "id") == "leader-changes" }); changes != nil {
		if li := domFind(changes, func(n *html.Node) bool { return domHasClass(n, "leader-change") }); li != nil {
			if l := domFind(li, func(n *html.Node) bool { return domHasClass(n, "leader") }); l != nil {
				p.lastChange = domText(l)
			}
		}
	}
	return p
}

func domAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func domHasClass(n *html.Node, class string) bool {
	return n.Type == html.ElementNode && slices.Contains(strings.Fields(domAttr(n, "class")), class)
}

// domFind returns the first node under n (n included), in document order,
// that match accepts.
func domFind(n *html.Node, match func(*html.Node) bool) *html.Node {
	if all := domFindAll(n, match); len(all) > 0 {
		return all[0]
	}
	return nil
}

func domFindAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode && match(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, domFindAll(c, match)...)
	}
	return out
}

func domText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}
