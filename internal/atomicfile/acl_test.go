package atomicfile

import (
	"os"
	"testing"
)

func TestOwnerOnlySDDL(t *testing.T) {
	const sid = "S-1-5-21-1004336348-1177238915-682003330-1001"
	want := "D:P(A;;FA;;;S-1-5-21-1004336348-1177238915-682003330-1001)(A;;FA;;;SY)"
	if got := ownerOnlySDDL(sid); got != want {
		t.Errorf("ownerOnlySDDL = %s, want %s", got, want)
	}
	for perm, want := range map[uint32]bool{0o600: true, 0o700: true, 0o400: true, 0o640: false, 0o644: false, 0o606: false} {
		if got := ownerOnly(os.FileMode(perm)); got != want {
			t.Errorf("ownerOnly(%#o) = %v", perm, got)
		}
	}
}
