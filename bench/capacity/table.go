package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// The markdown tables a run prints: what the state costs, how fast it
// recovers, how reads and writes fare, and how long each phase took.

// phaseOrder is the order phases are run and printed in.
var phaseOrder = []string{"fill", "memory", "checkpoint", "load", "raft-snapshot", "restart", "wipe", "disk"}

func writeTables(w io.Writer, r *Report) {
	fmt.Fprintf(w, "### State and recovery (%s)\n\n", settingsLine(r.Settings))
	table(w, []string{"records", "live", "streams", "leader RSS MiB", "B/record", "heap B/record", "state disk B/record", "data dir B/record",
		"checkpoint MB", "checkpoint s",
		"raft snapshot MB", "persist s", "restart s", "restore s", "wiped catch-up s", "wiped via"}, r.Sizes, stateRow)
	fmt.Fprintf(w, "\n### Latency at concurrency %d (ms; \"snap\": while checkpoints are streamed from the leader; "+
		"\"wipe\": while a wiped follower catches up; cache: the state store's hits over lookups during the resolve run)\n\n", r.Settings.Concurrency)
	table(w, []string{"records", "resolve p50", "resolve p99", "resolve p99 snap", "resolve/s", "resolve cache hit %",
		"append p50", "append p99", "append p99 snap", "append p99 wipe", "append/s", "errors"}, r.Sizes, latencyRow)
	fmt.Fprintf(w, "\n### Phase wall times (s)\n\n")
	table(w, append(append([]string{"records"}, phaseOrder...), "fill records/s"), r.Sizes, phaseRow)
}

func settingsLine(s Settings) string {
	trim := "untrimmed"
	if s.Trim > 0 {
		trim = fmt.Sprintf("trim %.2f", s.Trim)
	}
	return fmt.Sprintf("up to %d streams, %s, raft snapshot threshold %d, log store %s", s.Streams, trim, s.SnapshotThreshold, s.LogStore)
}

func table(w io.Writer, head []string, sizes []SizeResult, row func(SizeResult) []string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" ---: |", len(head)))
	for _, s := range sizes {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row(s), " | "))
	}
}

func stateRow(s SizeResult) []string {
	row := []string{count(s.Records), count(s.LiveRecords), fmt.Sprint(s.Streams)}
	if lm, ok := leaderOf(s.Memory); ok {
		row = append(row, mib(lm.RSSBytes), fmt.Sprintf("%.0f", s.BytesPerRecord), fmt.Sprintf("%.0f", s.HeapBytesPerRecord))
	} else {
		row = append(row, "-", "-", "-")
	}
	row = append(row, perRecord(s.StateDiskBytesPerRecord), perRecord(s.DataDirBytesPerRecord))
	if cp := s.Checkpoint; cp != nil {
		row = append(row, mb(cp.Bytes), secs(cp.Seconds))
	} else {
		row = append(row, "-", "-")
	}
	if rs := s.RaftSnapshot; rs != nil && rs.Taken {
		row = append(row, mb(rs.Bytes), secs(rs.PersistMs/1000))
	} else {
		row = append(row, "-", "-")
	}
	if r := s.Restart; r != nil {
		row = append(row, secs(r.ServingSeconds), restore(r))
	} else {
		row = append(row, "-", "-")
	}
	if r := s.Wiped; r != nil {
		via := "log"
		if r.InstallSnapshot {
			via = "InstallSnapshot"
		}
		row = append(row, secs(r.ServingSeconds), via)
	} else {
		row = append(row, "-", "-")
	}
	return row
}

func restore(r *Rejoin) string {
	if !r.FromSnapshot {
		return "none (log)"
	}
	return secs(r.RestoreMs / 1000)
}

func latencyRow(s SizeResult) []string {
	row := []string{count(s.Records)}
	get := func(k string) *Load { return s.Load[k] }
	ms := func(l *Load, p99 bool) string {
		if l == nil {
			return "-"
		}
		if p99 {
			return fmt.Sprintf("%.2f", l.P99Ms)
		}
		return fmt.Sprintf("%.2f", l.P50Ms)
	}
	rate := func(l *Load) string {
		if l == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f", l.Throughput)
	}
	r, rd, a, ad := get(loadResolve), get(loadResolveDuring), get(loadAppend), get(loadAppendDuring)
	var aw *Load
	if s.Wiped != nil {
		aw = s.Wiped.Commit
	}
	var cache *Cache
	if r != nil {
		cache = r.Cache
	}
	row = append(row, ms(r, false), ms(r, true), ms(rd, true), rate(r), hitRatio(cache),
		ms(a, false), ms(a, true), ms(ad, true), ms(aw, true), rate(a))
	var errs int64
	for _, l := range append(slices.Collect(maps.Values(s.Load)), aw) {
		if l == nil {
			continue
		}
		for _, n := range l.Errors {
			errs += n
		}
	}
	return append(row, fmt.Sprint(errs))
}

// hitRatio prints a cache's hit ratio as a percentage, "-" when the
// servers do not report their cache or it saw no lookups.
func hitRatio(c *Cache) string {
	if c == nil || c.Hits+c.Misses == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", 100*c.HitRatio)
}

// perRecord prints bytes per record, "-" for 0 (not measured).
func perRecord(b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", b)
}

func phaseRow(s SizeResult) []string {
	row := []string{count(s.Records)}
	for _, p := range phaseOrder {
		if v, ok := s.Phases[p]; ok {
			row = append(row, secs(v))
		} else {
			row = append(row, "-")
		}
	}
	return append(row, fmt.Sprintf("%.0f", s.FillRecordsPerSecond))
}

// count prints 10000 as 10k and 1000000 as 1M when exact.
func count(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
func mb(b int64) string  { return fmt.Sprintf("%.1f", float64(b)/1e6) }
func secs(s float64) string {
	if s < 10 {
		return fmt.Sprintf("%.2f", s)
	}
	return fmt.Sprintf("%.1f", s)
}
