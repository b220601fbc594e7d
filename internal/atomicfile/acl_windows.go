//go:build windows

package atomicfile

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// restrict gives path an owner-only DACL when perm is owner-only (0600):
// on NTFS the mode bits mean nothing, and a file would otherwise inherit
// its folder's ACL (every local user may read a folder made at C:\). A
// file system without ACLs (FAT, some shares) is left as it is, as chmod
// does nothing there.
func restrict(path string, perm os.FileMode) error {
	if !ownerOnly(perm) {
		return nil
	}
	tok := windows.GetCurrentProcessToken()
	user, err := tok.GetTokenUser()
	if err != nil {
		return fmt.Errorf("owner-only ACL for %s: %w", path, err)
	}
	sd, err := windows.SecurityDescriptorFromString(ownerOnlySDDL(user.User.Sid.String()))
	if err != nil {
		return fmt.Errorf("owner-only ACL for %s: %w", path, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("owner-only ACL for %s: %w", path, err)
	}
	err = windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if errors.Is(err, windows.ERROR_NOT_SUPPORTED) || errors.Is(err, windows.ERROR_INVALID_FUNCTION) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("owner-only ACL for %s: %w", path, err)
	}
	return nil
}
