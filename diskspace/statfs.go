package diskspace

import "golang.org/x/sys/unix"

// statfs asks the kernel for the space of dir's filesystem: Bavail, the
// blocks an unprivileged writer may still use (the root reserve excluded).
func statfs(dir string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Usage{}, err
	}
	bs := uint64(st.Bsize) //nolint:gosec // a block size is positive
	return Usage{Free: st.Bavail * bs, Total: st.Blocks * bs}, nil
}
