//go:build windows

package atomicfile

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestStateFileACL: a file written 0600 carries a protected DACL with the
// user and SYSTEM only.
func TestStateFileACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.json")
	if err := WriteFile(path, []byte("{}"), Mode); err != nil {
		t.Fatal(err)
	}
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	got := sd.String()
	if !strings.Contains(got, "D:P") || !strings.Contains(got, user.User.Sid.String()) || strings.Count(got, "(A;") != 2 {
		t.Errorf("DACL %s, want %s", got, ownerOnlySDDL(user.User.Sid.String()))
	}
}
