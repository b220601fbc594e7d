//go:build windows

package mcpconfig

import "testing"

// TestNearestProjectWindowsKeys: Claude Code on Windows keys ~/.claude.json
// projects with forward slashes and the drive letter as its cwd spelled it.
func TestNearestProjectWindowsKeys(t *testing.T) {
	projects := map[string]int{"c:/Users/lily/night": 1, "C:/Users/lily": 2, "D:/other": 3}
	for cwd, want := range map[string]string{
		`C:\Users\lily\night`:     "c:/Users/lily/night",
		`C:\Users\lily\night\sub`: "c:/Users/lily/night",
		`C:\Users\lily\elsewhere`: "C:/Users/lily",
		`C:\Users\lilyann\night`:  "",
		`E:\x`:                    "",
	} {
		got, ok := nearestProject(projects, cwd)
		if got != want || ok != (want != "") {
			t.Errorf("nearestProject(%s) = %q, %v; want %q", cwd, got, ok, want)
		}
	}
}
