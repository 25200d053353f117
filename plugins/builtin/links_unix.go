//go:build unix

package builtin

import (
	"errors"
	"os"
	"syscall"
)

// openNoBlock is added to the flags of an open for writing, so that a FIFO
// swapped in for a checked regular file fails (ENXIO without a reader)
// instead of blocking the call.
const openNoBlock = syscall.O_NONBLOCK

// linkCount returns the number of hard links of the open file f, from its
// descriptor (fstat), so it describes the file written and not whatever the
// path names by now.
func linkCount(f *os.File) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return uint64(st.Nlink), nil
}

// statLinkCount returns the number of hard links fi (from Lstat) reports.
func statLinkCount(_ *os.Root, _ string, fi os.FileInfo) (uint64, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("the file system reports no link count")
	}
	return uint64(st.Nlink), nil
}
