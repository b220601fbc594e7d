package environ

import (
	"runtime"
	"strings"
)

// baseNames are the variables every MCP server process may see besides its
// own env: what a program needs to find binaries, its home, its locale and
// its temp folder on each platform, and nightwatch's spawn marks (so a
// server that detaches is still found). Nothing here is a credential.
var baseNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true, "TERM": true,
	"TMPDIR": true, "TMP": true, "TEMP": true,
	"XDG_RUNTIME_DIR": true, "XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true, "XDG_DATA_HOME": true,
	"NIGHTWATCH_SPAWN": true,
}

// windowsBaseNames are what a Windows program needs to run at all (the
// system root, the command interpreter, executable extensions, the user's
// profile folders). Windows names are case-insensitive.
var windowsBaseNames = map[string]bool{
	"SYSTEMROOT": true, "SYSTEMDRIVE": true, "WINDIR": true, "COMSPEC": true, "PATHEXT": true,
	"USERPROFILE": true, "APPDATA": true, "LOCALAPPDATA": true, "PROGRAMDATA": true,
	"PROGRAMFILES": true, "PROGRAMFILES(X86)": true, "COMMONPROGRAMFILES": true,
	"HOMEDRIVE": true, "HOMEPATH": true, "USERNAME": true, "NUMBER_OF_PROCESSORS": true,
	"PROCESSOR_ARCHITECTURE": true, "OS": true,
}

// IsBase reports whether name is a base variable (BaseNames) on this
// platform.
func IsBase(name string) bool { return isBase(name, runtime.GOOS) }

func isBase(name, goos string) bool {
	if strings.HasPrefix(name, "LC_") || baseNames[name] {
		return true
	}
	if goos == "windows" {
		upper := strings.ToUpper(name)
		return baseNames[upper] || windowsBaseNames[upper]
	}
	return false
}

// Base returns the base variables of env (os.Environ() form), in order:
// the least-privilege start of an MCP server's environment, to which only
// its own env is added. Another server's keys, the batch's env_file and
// the agent's own credentials (ANTHROPIC_API_KEY) are not base.
func Base(env []string) []string {
	return baseOf(env, runtime.GOOS)
}

func baseOf(env []string, goos string) []string {
	out := make([]string, 0, 16)
	for _, kv := range env {
		if name, _, ok := strings.Cut(kv, "="); ok && isBase(name, goos) {
			out = append(out, kv)
		}
	}
	return out
}
