//go:build unix

package adapter

import (
	"io/fs"
	"os"
	"syscall"
)

// openNonBlocking opens a disk cache entry without waiting for a writer:
// a FIFO planted at an entry's path is then refused, not waited on.
const openNonBlocking = syscall.O_NONBLOCK

// ownerOf returns the owner of fi and whether it is this process's user
// (or root, who can write anywhere anyway).
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, true
	}
	uid := int(st.Uid)
	return uid, uid == os.Geteuid() || uid == 0
}
