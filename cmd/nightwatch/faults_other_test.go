//go:build !unix

package main

import "os"

// minorFaults is not counted where rusage is not kept.
func minorFaults(*os.ProcessState) int64 { return -1 }
