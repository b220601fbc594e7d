//go:build !linux

package main

// reportPeakRSS is Linux-only (it reads /proc); the benchmarks run there.
func reportPeakRSS() {}
