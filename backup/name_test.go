package backup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/objectstore"
)

var t0 = time.Date(2026, 12, 2, 3, 15, 0, 123456789, time.UTC)

func TestNameRoundTrip(t *testing.T) {
	for _, id := range []string{"3f9c00e1", "with-dashes-in-it", "x"} {
		n := Name(id, t0.In(time.FixedZone("CET", 3600)), 4711)
		if want := "metad-" + id + "-20261202T031500.123Z-00000000000000004711.snap"; n != want {
			t.Fatalf("Name = %s, want %s", n, want)
		}
		e, ok := Parse(n)
		if !ok || e.ClusterID != id || !e.Time.Equal(t0.Truncate(time.Millisecond)) || e.Index != 4711 || e.Name != n {
			t.Fatalf("Parse(%s) = %+v, %v", n, e, ok)
		}
	}
}

func TestParseRefusesOtherNames(t *testing.T) {
	good := Name("abc", t0, 1)
	for _, n := range []string{
		"", "backup.snap", "." + good + ".part", good + ".part", strings.TrimSuffix(good, ".snap"),
		"metad-abc-20261202T031500.123Z-1.snap",                    // index not padded
		"metad-abc-2026-12-02T03:15:00Z-00000000000000000001.snap", // another time layout
		"metad--20261202T031500.123Z-00000000000000000001.snap",    // no cluster id
		"metad-20261202T031500.123Z-00000000000000000001.snap",
	} {
		if e, ok := Parse(n); ok {
			t.Errorf("Parse(%q) = %+v, want not a backup", n, e)
		}
	}
}

// TestNamesSortByTime: within a cluster, name order is time order, then
// index order.
func TestNamesSortByTime(t *testing.T) {
	var names []string
	for i := range 30 {
		names = append(names, Name("c", t0.Add(time.Duration(i)*997*time.Millisecond), uint64(100-i)))
	}
	names = append(names, Name("c", t0.Add(29*997*time.Millisecond), 71)) // same ms, higher index
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if !slices.Equal(sorted, names) {
		t.Fatalf("name order is not time order:\n%v\n%v", sorted, names)
	}
}

func TestPrune(t *testing.T) {
	var names []string
	for i := range 5 {
		names = append(names, Name("mine", t0.Add(time.Duration(i)*time.Minute), uint64(10+i)))
	}
	other := Name("other", t0.Add(-time.Hour), 1)
	names = append(names, other, "notes.txt", "."+names[0]+".part")
	slices.Reverse(names) // the target's order is no order
	cases := []struct {
		retain int
		want   []string
	}{
		{retain: 5},
		{retain: 9},
		{retain: 3, want: []string{Name("mine", t0.Add(time.Minute), 11), Name("mine", t0, 10)}},
		{retain: 1, want: []string{Name("mine", t0.Add(3*time.Minute), 13), Name("mine", t0.Add(2*time.Minute), 12), Name("mine", t0.Add(time.Minute), 11), Name("mine", t0, 10)}},
		{retain: 0, want: []string{Name("mine", t0.Add(3*time.Minute), 13), Name("mine", t0.Add(2*time.Minute), 12), Name("mine", t0.Add(time.Minute), 11), Name("mine", t0, 10)}},
	}
	for _, c := range cases {
		if got := Prune(names, "mine", c.retain); !slices.Equal(got, c.want) {
			t.Errorf("retain %d: prune %v, want %v", c.retain, got, c.want)
		}
	}
	if got := Prune(names, "other", 1); len(got) != 0 {
		t.Errorf("other cluster's only backup pruned: %v", got)
	}
}

func TestDue(t *testing.T) {
	start, iv := t0, 10*time.Minute
	newest := &Entry{Time: t0.Add(-4 * time.Minute)}
	stale := &Entry{Time: t0.Add(-time.Hour)}
	cases := []struct {
		name   string
		newest *Entry
		now    time.Time
		want   time.Time
	}{
		{"no backup yet: one interval after leadership began", nil, start, start.Add(iv)},
		{"a previous leader's schedule goes on", newest, start, newest.Time.Add(iv)},
		{"overdue: now", stale, start, start},
		{"never before now", nil, start.Add(time.Hour), start.Add(time.Hour)},
	}
	for _, c := range cases {
		if got := Due(c.newest, start, c.now, iv); !got.Equal(c.want) {
			t.Errorf("%s: due %v, want %v", c.name, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Interval: time.Hour, To: "/var/backups/metad", Retain: 7}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Config{Retain: 7}).Validate(); err != nil {
		t.Fatalf("off: %v", err)
	}
	cases := []struct {
		c    Config
		want []string
	}{
		{Config{To: "/x", Retain: 7}, []string{"backup-to", "backup-interval"}},
		{Config{Interval: time.Millisecond, To: "/x", Retain: 7}, []string{"backup-interval 1ms", "at least 1s"}},
		{Config{Interval: -time.Second, To: "/x", Retain: 7}, []string{"backup-interval -1s"}},
		{Config{Interval: time.Hour, To: "/x", Retain: 0}, []string{"backup-retain 0"}},
		{Config{Interval: time.Hour, To: "/x", Retain: MaxRetain + 1}, []string{"backup-retain 10001"}},
		{Config{Interval: time.Hour, Retain: 7}, []string{"backup-to: required"}},
		{Config{Interval: time.Hour, To: "ftp://host/x", Retain: 7}, []string{`backup-to: "ftp://host/x"`}},
		{Config{Interval: time.Hour, To: "s3://", Retain: 7}, []string{"backup-to"}},
		{Config{Interval: time.Hour, To: "s3:///prefix", Retain: 7}, []string{"backup-to"}},
		// Every problem at once.
		{Config{Interval: time.Millisecond, To: "gs://b", Retain: -1}, []string{"backup-interval", "backup-retain", "backup-to"}},
	}
	for _, c := range cases {
		err := c.c.Validate()
		if err == nil {
			t.Errorf("%+v: valid", c.c)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %q does not say %q", c.c, err, w)
			}
		}
	}
}

func TestParseURL(t *testing.T) {
	cases := []struct {
		url    string
		scheme Scheme
		rest   string
	}{
		{"/var/backups", SchemeDir, "/var/backups"},
		{"rel/dir", SchemeDir, "rel/dir"},
		{"file:///var/backups", SchemeDir, "/var/backups"},
		{"s3://bucket", SchemeS3, "bucket"},
		{"s3://bucket/metad/prod/", SchemeS3, "bucket/metad/prod"},
	}
	for _, c := range cases {
		scheme, rest, err := ParseURL(c.url)
		if err != nil || scheme != c.scheme || rest != c.rest {
			t.Errorf("ParseURL(%q) = %q %q %v, want %q %q", c.url, scheme, rest, err, c.scheme, c.rest)
		}
	}
}

func TestSplitObjectURL(t *testing.T) {
	for url, want := range map[string][2]string{
		"s3://b/k.snap":          {"s3://b", "k.snap"},
		"s3://b/p/q/k.snap":      {"s3://b/p/q", "k.snap"},
		"s3://b//p//k.snap":      {"s3://b/p", "k.snap"},
		"s3://b/p/metad-x.snap/": {},
		"s3://b":                 {},
		"/local/file":            {},
	} {
		store, key, err := SplitObjectURL(url)
		if want == [2]string{} {
			if err == nil {
				t.Errorf("SplitObjectURL(%q) = %q %q, want an error", url, store, key)
			}
			continue
		}
		if err != nil || store != want[0] || key != want[1] {
			t.Errorf("SplitObjectURL(%q) = %q %q %v, want %v", url, store, key, err, want)
		}
	}
}

// TestOpenTargetChecksWithoutWriting: a writable dir, or one creatable
// under a writable ancestor, is accepted and left as it was; a file in the
// way or a read-only dir is refused naming the flag.
func TestOpenTargetChecksWithoutWriting(t *testing.T) {
	root := t.TempDir()
	if _, err := OpenTarget(t.Context(), "backup-to", root, noS3); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b")
	if _, err := OpenTarget(t.Context(), "backup-to", "file://"+deep, noS3); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("OpenTarget wrote %v", ents)
	}
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTarget(t.Context(), "backup-to", filepath.Join(file, "sub"), noS3); err == nil || !strings.Contains(err.Error(), "backup-to") {
		t.Errorf("a file in the way: %v", err)
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(root, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenTarget(t.Context(), "backup-to", ro, noS3); err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("a read-only dir: %v", err)
		}
	}
}

var noS3 = objectstore.S3Config{}
