//go:build windows

package healthsync

import (
	"errors"
	"os"
	"strings"
)

func userTag() string {
	u := os.Getenv("USERNAME")
	u = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, u)
	if u == "" {
		u = "user"
	}
	return u
}

// privateDir: on Windows the user's temporary folder is already the
// user's own (its ACL); only a link is refused here.
func privateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
		return errors.New("not a folder (a symlink or junction is refused)")
	}
	return nil
}
