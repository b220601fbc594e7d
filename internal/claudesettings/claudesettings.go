// Package claudesettings says where Claude Code reads its settings from,
// for the parts of nightwatch that read them (doctor's checks, the night's
// choice of hook transport): one place for the managed folder of each OS.
package claudesettings

import (
	"path/filepath"
	"runtime"
)

// ManagedDir is where Claude Code reads the organisation's managed
// settings on this OS.
func ManagedDir() string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/ClaudeCode"
	case "windows":
		return `C:\ProgramData\ClaudeCode`
	}
	return "/etc/claude-code"
}

// ManagedFiles are the managed settings files in dir (ManagedDir, or a
// test's folder): managed-settings.json, then the managed-settings.d
// drop-ins in name order.
func ManagedFiles(dir string) []string {
	files := []string{filepath.Join(dir, "managed-settings.json")}
	drop, _ := filepath.Glob(filepath.Join(dir, "managed-settings.d", "*.json"))
	return append(files, drop...)
}
