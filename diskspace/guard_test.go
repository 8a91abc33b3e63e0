package diskspace

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/metad/metad/internal/fakeclock"
)

// disk is a filesystem whose free space the test sets.
type disk struct {
	mu   sync.Mutex
	free uint64
	err  error
}

func (d *disk) set(free uint64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.free, d.err = free, err
}

func (d *disk) statfs(string) (Usage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Usage{Free: d.free, Total: 1 << 30}, d.err
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestBelowTheReserveRefusesNamingTheFilesystem(t *testing.T) {
	d := &disk{free: 10 << 20}
	g := New(Config{Dir: "/data/n1", Reserve: 64 << 20}, quiet(), WithStatfs(d.statfs))
	err := g.Refuse()
	var fe *FullError
	if !errors.Is(err, ErrDiskFull) || !errors.As(err, &fe) {
		t.Fatalf("Refuse() = %v, want a *FullError from the first check", err)
	}
	for _, want := range []string{"/data/n1", "10.0 MiB free", "64.0 MiB reserve", "--disk-reserve"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	d.set(64<<20, nil)
	if g.Check(); g.Refuse() != nil {
		t.Fatalf("at the reserve: %v, want accepted", g.Refuse())
	}
}

func TestAFailedCheckKeepsTheVerdict(t *testing.T) {
	d := &disk{free: 1}
	g := New(Config{Dir: "d", Reserve: 2}, quiet(), WithStatfs(d.statfs))
	d.set(100, errors.New("EIO"))
	if st := g.Check(); !st.Low || st.Err == nil {
		t.Fatalf("state after a failed check: %+v, want still low with the error", st)
	}
	d.set(100, nil)
	if st := g.Check(); st.Low || st.Err != nil {
		t.Fatalf("state after space returned: %+v", st)
	}
}

func TestNoReserveIsNeverLow(t *testing.T) {
	g := New(Config{Dir: "d"}, quiet(), WithStatfs((&disk{}).statfs))
	if g.Refuse() != nil || g.State().Low {
		t.Fatal("a guard without a reserve refused")
	}
	var nilGuard *Guard
	if nilGuard.Refuse() != nil {
		t.Fatal("a nil guard refused")
	}
}

// TestRunHealsByItself: the loop notices space freed within one interval,
// with no call from outside.
func TestRunHealsByItself(t *testing.T) {
	d := &disk{free: 0}
	clk := fakeclock.New(time.Unix(0, 0))
	g := New(Config{Dir: "d", Reserve: 100, Interval: time.Second}, quiet(), WithStatfs(d.statfs), WithClock(clk))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	defer func() { cancel(); <-done }()
	clk.BlockUntil(1)
	if g.Refuse() == nil {
		t.Fatal("not low on an empty disk")
	}
	d.set(1000, nil)
	clk.Advance(time.Second)
	clk.BlockUntil(1) // the loop checked and waits again
	if err := g.Refuse(); err != nil {
		t.Fatalf("after space returned and one interval: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	d := &disk{free: 5}
	g := New(Config{Dir: "d", Reserve: 10}, quiet(), WithStatfs(d.statfs))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(g.Collector())
	want := `# HELP metad_disk_low 1 while the data dir's filesystem is below its reserve and growth is refused.
# TYPE metad_disk_low gauge
metad_disk_low 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "metad_disk_low"); err != nil {
		t.Fatal(err)
	}
}

func TestStatfsReadsARealFilesystem(t *testing.T) {
	u, err := statfs(t.TempDir())
	if err != nil || u.Total == 0 || u.Free > u.Total {
		t.Fatalf("statfs = %+v, %v", u, err)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 256 << 20: "256.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
