package backup

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/metad/metad/objectstore"
)

// MinInterval is the shortest --backup-interval: one second. A backup
// costs a checkpoint (a clone of the state) and a write of the whole
// state, so production schedules are minutes to hours; the floor is low
// so that a test can watch several backups happen, and still keeps a
// mistyped "1ms" from turning the leader into a backup loop.
const MinInterval = time.Second

// MaxRetain bounds --backup-retain: a listing of the target reads every
// backup's name each round.
const MaxRetain = 10000

// DefaultRetain is --backup-retain's default.
const DefaultRetain = 7

// Config is the backup schedule. The zero Interval turns backups off.
type Config struct {
	// Interval is the time between backups: 0 (off, the default) or at
	// least MinInterval.
	Interval time.Duration
	// To is where backups go: a directory (file:///path or a plain path)
	// or s3://BUCKET[/PREFIX]. Required when Interval is set.
	To string
	// Retain is how many of this cluster's newest backups are kept, in
	// [1, MaxRetain]. Default DefaultRetain.
	Retain int
	// S3 reaches an s3:// target: the server's object store settings.
	S3 objectstore.S3Config
}

// Enabled reports whether backups are on.
func (c Config) Enabled() bool { return c.Interval != 0 }

// Validate reports every problem at once, naming the flag at fault. It
// only looks at the values: OpenTarget checks the target itself.
func (c Config) Validate() error {
	if !c.Enabled() {
		if c.To != "" {
			return fmt.Errorf("backup-to %q: backups are off without backup-interval (give one, at least %v)", c.To, MinInterval)
		}
		return nil
	}
	var errs []error
	if c.Interval < MinInterval {
		errs = append(errs, fmt.Errorf("backup-interval %v: want 0 (off) or at least %v", c.Interval, MinInterval))
	}
	if c.Retain < 1 || c.Retain > MaxRetain {
		errs = append(errs, fmt.Errorf("backup-retain %d: want 1 to %d", c.Retain, MaxRetain))
	}
	if _, _, err := ParseURL(c.To); err != nil {
		errs = append(errs, fmt.Errorf("backup-to: %w", err))
	}
	return errors.Join(errs...)
}

// Scheme is the kind of a backup target.
type Scheme string

// The targets a backup URL can name.
const (
	SchemeDir Scheme = "file"
	SchemeS3  Scheme = "s3"
)

// ParseURL splits a backup URL into its scheme and the rest: the
// directory for file:///DIR or a plain path, BUCKET[/PREFIX] for s3://.
func ParseURL(raw string) (Scheme, string, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	switch {
	case raw == "":
		return "", "", errors.New("required; want file:///DIR, DIR or s3://BUCKET[/PREFIX]")
	case !ok:
		return SchemeDir, raw, nil
	case scheme == "file" && rest != "":
		return SchemeDir, rest, nil
	case scheme == "s3" && strings.Trim(rest, "/") != "" && !strings.HasPrefix(rest, "/"):
		return SchemeS3, strings.TrimSuffix(rest, "/"), nil
	}
	return "", "", fmt.Errorf("%q: want file:///DIR, DIR or s3://BUCKET[/PREFIX]", raw)
}
