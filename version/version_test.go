package version

import (
	"runtime/debug"
	"testing"
)

func TestCommitOf(t *testing.T) {
	for _, c := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, "unknown"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, "unknown"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "3fc933d"}}, "3fc933d"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}, "abc+dirty"},
	} {
		if got := commitOf(c.settings); got != c.want {
			t.Errorf("commitOf(%v) = %q, want %q", c.settings, got, c.want)
		}
	}
}
