//go:build windows

package atomicfile

import "testing"

// Windows has no FIFOs in the file system namespace.
func platformReadCases(*testing.T, string) []readCase { return nil }
