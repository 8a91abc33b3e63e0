// Package version names this build of metad: the release (a constant,
// advanced by hand at each release; RELEASES.md lists them) and the commit
// it was built from (the Go toolchain records it in the binary).
package version

import "runtime/debug"

// Release is the release this source tree is, or is on its way to.
const Release = "0.2.0-dev"

// Commit returns the VCS revision recorded at build time, with "+dirty"
// when the tree had local changes, or "unknown" when the binary carries
// none (go run, or a build outside a repository).
func Commit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return commitOf(info.Settings)
}

func commitOf(settings []debug.BuildSetting) string {
	rev, dirty := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
