package node

import (
	"bytes"
	"context"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/version"
)

// statusPageTimeout bounds the gathering of one status page: a peer that
// does not answer is shown UNREACHABLE rather than holding the page.
const statusPageTimeout = 2 * time.Second

// statusPage is what the page at / shows, gathered once per request.
type statusPage struct {
	NodeID, Release, Commit string
	At                      time.Time
	// Err says why the cluster status could not be gathered; the fields
	// from it are then empty.
	Err          string
	LeaderID     string
	FeatureLevel uint32
	// ClusterID is the replicated state's cluster id ("" before level 2).
	ClusterID string
	Servers   []serverRow
	// Streams is the number of streams in this node's applied state;
	// StreamsErr says why it is unknown.
	Streams    int
	StreamsErr string
	Changes    []leaderChange
}

// serverRow is one server of the Raft configuration.
type serverRow struct {
	ID, GRPCAddr, State string
	Voter               bool
	Applied             uint64
	// Lag is the leader's commit index minus this server's applied index,
	// or a word saying why it is unknown.
	Lag   string
	Error string
}

// serveStatusPage answers GET / with a server-side rendered page: no
// script, a meta refresh every 5 s. Everything shown is escaped by
// html/template.
func (n *Server) serveStatusPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), statusPageTimeout)
	defer cancel()
	var buf bytes.Buffer
	if err := statusTemplate.Execute(&buf, n.gatherStatusPage(ctx)); err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// gatherStatusPage asks the API's Status (every server of the
// configuration describes itself) and reads this node's state for the
// stream count.
func (n *Server) gatherStatusPage(ctx context.Context) statusPage {
	p := statusPage{NodeID: n.cfg.NodeID, Release: version.Release, Commit: version.Commit(),
		At: serverClock.Now().UTC(), Changes: n.leaders.recent()}
	if err := n.store.ReadLocal(func(m *fsm.Machine) error {
		p.Streams = m.Counts().Streams
		return nil
	}); err != nil {
		p.StreamsErr = err.Error()
	}
	st, err := n.api.Status(ctx, &metadpb.StatusRequest{})
	if err != nil {
		p.Err = "cluster status unavailable: " + err.Error()
		return p
	}
	p.LeaderID, p.FeatureLevel, p.ClusterID = st.LeaderId, st.ClusterFeatureLevel, st.ClusterId
	p.Servers = serverRows(st)
	return p
}

// serverRows turns the Status answer into table rows, with each server's
// lag behind the leader's commit index.
func serverRows(st *metadpb.StatusResponse) []serverRow {
	var leaderCommit uint64
	leaderKnown := false
	for _, ns := range st.Nodes {
		if ns.NodeId == st.LeaderId && ns.State == "Leader" {
			leaderCommit, leaderKnown = ns.CommitIndex, true
		}
	}
	rows := make([]serverRow, 0, len(st.Nodes))
	for _, ns := range st.Nodes {
		row := serverRow{ID: ns.NodeId, GRPCAddr: ns.GrpcAddr, State: ns.State, Voter: ns.Voter,
			Applied: ns.AppliedIndex, Error: ns.Error}
		switch {
		case ns.State == "UNREACHABLE":
			row.Lag = "unknown"
		case !leaderKnown:
			row.Lag = "no leader"
		case ns.AppliedIndex >= leaderCommit:
			row.Lag = "0"
		default:
			row.Lag = strconv.FormatUint(leaderCommit-ns.AppliedIndex, 10)
		}
		rows = append(rows, row)
	}
	return rows
}

// statusTemplate is the page. Element ids and classes are part of what
// the status page test reads; keep them when changing the layout.
var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="5">
<title>metad {{.NodeID}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.1em; margin-top: 1.5em; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { color: #666; }
dd { margin: 0; font-family: monospace; }
table { border-collapse: collapse; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.8em; text-align: left; }
td { font-family: monospace; }
.Leader { font-weight: bold; color: #075; }
.UNREACHABLE, .error { color: #b00; }
.muted { color: #666; font-size: 0.9em; }
</style>
</head>
<body>
<h1>metad <span id="node-id">{{.NodeID}}</span></h1>
<p class="muted">as seen by this server at <span id="generated-at">{{stamp .At}}</span>; refreshes every 5 s</p>
{{if .Err}}<p id="error" class="error">{{.Err}}</p>{{end}}
<dl>
<dt>release</dt><dd id="release">{{.Release}}</dd>
<dt>commit</dt><dd id="commit">{{.Commit}}</dd>
<dt>leader</dt><dd id="leader">{{if .LeaderID}}{{.LeaderID}}{{else}}NO LEADER{{end}}</dd>
<dt>cluster id</dt><dd id="cluster-id">{{if .Err}}unknown{{else if .ClusterID}}{{.ClusterID}}{{else}}none yet (set at feature level 2){{end}}</dd>
<dt>cluster feature level</dt><dd id="feature-level">{{if .Err}}unknown{{else}}{{.FeatureLevel}}{{end}}</dd>
<dt>streams</dt><dd id="streams">{{if .StreamsErr}}unknown: {{.StreamsErr}}{{else}}{{.Streams}}{{end}}</dd>
</dl>
<h2>Servers</h2>
<table id="servers">
<thead><tr><th>node</th><th>gRPC address</th><th>state</th><th>voter</th><th>applied</th><th>lag</th><th>error</th></tr></thead>
<tbody>
{{range .Servers}}<tr class="server" data-node-id="{{.ID}}">
<td class="node-id">{{.ID}}</td><td class="grpc-addr">{{.GRPCAddr}}</td><td class="state {{.State}}">{{.State}}</td><td class="voter">{{if .Voter}}voter{{else}}non-voter{{end}}</td><td class="applied">{{.Applied}}</td><td class="lag">{{.Lag}}</td><td class="error">{{.Error}}</td>
</tr>
{{end}}</tbody>
</table>
<h2>Recent leader changes</h2>
<p class="muted">newest first, as this server saw them (the last {{len .Changes}}, at most 10)</p>
<ol id="leader-changes">
{{range .Changes}}<li class="leader-change"><span class="at">{{stamp .At}}</span> {{if .LeaderID}}<span class="leader">{{.LeaderID}}</span> in term <span class="term">{{.Term}}</span>{{else}}<span class="leader">no leader</span>{{end}}</li>
{{end}}</ol>
</body>
</html>
`))
