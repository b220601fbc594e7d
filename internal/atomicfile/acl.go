package atomicfile

import "os"

// ownerOnlySDDL is the security descriptor a Windows state file gets where
// Unix gets 0600: a protected DACL (nothing inherited from the folder)
// granting full access to the user whose SID is given and to SYSTEM (which
// backup and the file system's own services run as), and to no one else.
func ownerOnlySDDL(userSID string) string {
	return "D:P(A;;FA;;;" + userSID + ")(A;;FA;;;SY)"
}

// ownerOnly reports whether perm promises the file to its owner alone.
func ownerOnly(perm os.FileMode) bool { return perm.Perm()&0o077 == 0 }
