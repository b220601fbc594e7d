package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Secure makes root the state folder nightwatch may write into: it creates
// it (0700) when missing, and for root and each folder nightwatch writes
// under it (runs, logs, reports, spool) it refuses a symlink or a non-folder
// (another user could point the journal, the reports or the log into their
// own folders) and takes group and other write access away from a folder
// that has it (another user could plant such links). It returns what it
// tightened, for the operator to read, and an error that names the path
// for what it refuses. On Windows, where folders carry ACLs, not mode bits,
// it only creates root.
func Secure(root string) (tightened []string, err error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	if runtime.GOOS == "windows" {
		return nil, nil
	}
	for _, dir := range []string{root, Runs(root), Logs(root), Reports(root), Spool(root)} {
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // created 0700 when first written
		}
		if err != nil {
			return tightened, fmt.Errorf("state folder: %w", err)
		}
		if dir != root && fi.Mode()&fs.ModeSymlink != 0 {
			return tightened, fmt.Errorf("state folder: %s is a symbolic link; nightwatch writes journals, logs and reports only into folders of its own: remove it", dir)
		}
		if dir == root && fi.Mode()&fs.ModeSymlink != 0 {
			// The state_dir itself may be a link the operator made (to
			// another disk); what it points at is checked.
			if fi, err = os.Stat(dir); err != nil {
				return tightened, fmt.Errorf("state folder: %w", err)
			}
		}
		if !fi.IsDir() {
			return tightened, fmt.Errorf("state folder: %s is not a folder", dir)
		}
		if perm := fi.Mode().Perm(); perm&0o022 != 0 {
			if err := os.Chmod(dir, perm&^0o077); err != nil {
				return tightened, fmt.Errorf("state folder: %s can be written by other users (mode %04o) and cannot be tightened: %w; make it yours with mode 0700",
					dir, perm, err)
			}
			tightened = append(tightened, fmt.Sprintf("%s could be written by other users (mode %04o); it is now 0700", filepath.Clean(dir), perm))
		}
	}
	return tightened, nil
}
