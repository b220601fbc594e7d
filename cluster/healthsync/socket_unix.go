//go:build !windows

package healthsync

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

func userTag() string { return strconv.Itoa(os.Getuid()) }

// privateDir refuses a folder that is a link, not ours, or open to anyone
// else: whoever can enter it could take the host's claims.
func privateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a folder (a symlink is refused)")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("owned by uid %d, not by this user (%d)", st.Uid, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("its permissions are %04o; it must be 0700 (only its owner may enter it)", fi.Mode().Perm())
	}
	return nil
}
