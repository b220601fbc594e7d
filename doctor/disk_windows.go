//go:build windows

package doctor

import "golang.org/x/sys/windows"

// diskFree returns the bytes available to the caller and the size of the
// volume holding path.
func diskFree(path string) (free, total uint64, err error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, 0, err
	}
	var avail, size, all uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &size, &all); err != nil {
		return 0, 0, err
	}
	return avail, size, nil
}
