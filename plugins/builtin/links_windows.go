//go:build windows

package builtin

import (
	"os"
	"syscall"
)

// openNoBlock is 0: Windows has no FIFOs a file open could block on.
const openNoBlock = 0

// linkCount returns the number of hard links of the open file f, from its
// handle, so it describes the file written and not whatever the path names
// by now.
func linkCount(f *os.File) (uint64, error) {
	var info syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &info); err != nil {
		return 0, err
	}
	return uint64(info.NumberOfLinks), nil
}

// statLinkCount returns the number of hard links of rel, which Lstat on
// Windows does not report: it opens the file to ask its handle.
func statLinkCount(root *os.Root, rel string, _ os.FileInfo) (uint64, error) {
	f, err := root.Open(rel)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return linkCount(f)
}
