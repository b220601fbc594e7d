// Package knobs reads nightwatch's settings from the environment. Every
// NIGHTWATCH_* variable has the article's ECC_MCP_* variable as an alias, so
// a user of the Node hook swaps one command line and keeps their plist.
package knobs

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// Knobs are the settings shared by the hook and the operator commands.
type Knobs struct {
	StatePath        Value[string]
	TTL              Value[time.Duration]
	Backoff          Value[time.Duration]
	MaxBackoff       Value[time.Duration]
	ProbeTimeout     Value[time.Duration]
	ReconnectTimeout Value[time.Duration]
	// FailureThreshold is how many failed calls in a row, each naming a
	// server or upstream condition, open a server (passive outlier
	// detection).
	FailureThreshold Value[int]
	// ClientStartup is how long Claude Code waits for a server to connect:
	// its own MCP_TIMEOUT (milliseconds), which a hook inside a session
	// inherits.
	ClientStartup Value[time.Duration]
	// MaxHold is how long the hook holds a call to a server that is down
	// but being repaired before it denies it (0: never hold); a server's
	// own NIGHTWATCH_MAX_HOLD_<SERVER> overrides it (MaxHoldFor).
	MaxHold  Value[time.Duration]
	FailOpen Value[bool]
	// MCPConfig is the raw path list of NIGHTWATCH_MCP_CONFIG; empty means
	// search the way Claude Code does.
	MCPConfig  Value[string]
	LogPath    Value[string]
	EventsPath Value[string]
	// Problems are values that could not be read; each names its variable.
	// The default is used instead, and the problem is said on stderr.
	Problems []string
}

// Value is a setting and where it came from ("default", a variable name or
// a flag), so that status and doctor can say why a value is what it is.
type Value[T any] struct {
	V      T
	Source string
}

// Set records a value from a flag.
func (v *Value[T]) Set(val T, source string) { v.V, v.Source = val, source }

// Getenv looks a variable up; ok is false when it is unset.
type Getenv func(name string) (string, bool)

// Names of the variables, nightwatch's first, the article's alias second.
var (
	EnvStatePath        = []string{"NIGHTWATCH_STATE_PATH", "ECC_MCP_HEALTH_STATE_PATH"}
	EnvTTL              = []string{"NIGHTWATCH_TTL", "ECC_MCP_HEALTH_TTL_MS"}
	EnvBackoff          = []string{"NIGHTWATCH_BACKOFF", "ECC_MCP_HEALTH_BACKOFF_MS"}
	EnvMaxBackoff       = []string{"NIGHTWATCH_MAX_BACKOFF"}
	EnvProbeTimeout     = []string{"NIGHTWATCH_PROBE_TIMEOUT", "ECC_MCP_HEALTH_TIMEOUT_MS"}
	EnvReconnectTimeout = []string{"NIGHTWATCH_RECONNECT_TIMEOUT", "ECC_MCP_RECONNECT_TIMEOUT_MS"}
	EnvFailOpen         = []string{"NIGHTWATCH_FAIL_OPEN", "ECC_MCP_HEALTH_FAIL_OPEN"}
	// EnvMaxHold has no alias: the article denied at once. A server's own
	// is EnvMaxHoldPrefix + its reconnect.EnvKey.
	EnvMaxHold = []string{"NIGHTWATCH_MAX_HOLD"}
	// EnvFailureThreshold has no alias: the article had no passive
	// detection.
	EnvFailureThreshold = []string{"NIGHTWATCH_FAILURE_THRESHOLD"}
	// EnvClientStartup is Claude Code's own variable, read, never set.
	EnvClientStartup = []string{"MCP_TIMEOUT"}
	EnvMCPConfig     = []string{"NIGHTWATCH_MCP_CONFIG", "ECC_MCP_CONFIG_PATH"}
	EnvLog           = []string{"NIGHTWATCH_LOG"}
	EnvEvents        = []string{"NIGHTWATCH_EVENTS"}
	// EnvInputMaxBytes is accepted and ignored: nightwatch streams the
	// payload and has no input cap to raise.
	EnvInputMaxBytes = "ECC_HOOK_INPUT_MAX_BYTES"
)

// DefaultStatePath is the article's cache file, so an existing cache keeps
// working.
func DefaultStatePath(home string) string {
	return filepath.Join(home, ".claude", "mcp-health-cache.json")
}

// FromEnv reads every knob. home is the user's home directory.
func FromEnv(getenv Getenv, home string) Knobs {
	k := Knobs{
		StatePath:        Value[string]{DefaultStatePath(home), "default"},
		TTL:              Value[time.Duration]{2 * time.Minute, "default"},
		Backoff:          Value[time.Duration]{30 * time.Second, "default"},
		MaxBackoff:       Value[time.Duration]{10 * time.Minute, "default"},
		ProbeTimeout:     Value[time.Duration]{5 * time.Second, "default"},
		ReconnectTimeout: Value[time.Duration]{5 * time.Second, "default"},
		FailureThreshold: Value[int]{healthcheck.DefaultFailureThreshold, "default"},
		ClientStartup:    Value[time.Duration]{healthcheck.DefaultClientStartup, "default"},
		MaxHold:          Value[time.Duration]{healthcheck.DefaultMaxHold, "default"},
		FailOpen:         Value[bool]{false, "default"},
		MCPConfig:        Value[string]{"", "default"},
		LogPath:          Value[string]{"", "default"},
		EventsPath:       Value[string]{"", "default"},
	}
	if name, v, ok := first(getenv, EnvStatePath); ok {
		p, err := ExpandPath(v, home, getenv)
		if err != nil {
			k.Problems = append(k.Problems, fmt.Sprintf("%s: %v; using %s", name, err, k.StatePath.V))
		} else {
			k.StatePath.Set(p, name)
		}
	}
	k.duration(getenv, EnvTTL, &k.TTL)
	k.duration(getenv, EnvBackoff, &k.Backoff)
	k.duration(getenv, EnvMaxBackoff, &k.MaxBackoff)
	k.duration(getenv, EnvProbeTimeout, &k.ProbeTimeout)
	k.duration(getenv, EnvReconnectTimeout, &k.ReconnectTimeout)
	k.duration(getenv, EnvClientStartup, &k.ClientStartup)
	if name, v, ok := first(getenv, EnvMaxHold); ok {
		if d, err := ParseMaxHold(v); err != nil {
			k.Problems = append(k.Problems, fmt.Sprintf("%s=%q: %v; using %s", name, v, err, k.MaxHold.V))
		} else {
			k.MaxHold.Set(d, name)
		}
	}
	if name, v, ok := first(getenv, EnvFailureThreshold); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			k.Problems = append(k.Problems, fmt.Sprintf("%s=%q is not a count between 1 and 1000; using %d", name, v, k.FailureThreshold.V))
		} else {
			k.FailureThreshold.Set(n, name)
		}
	}
	if name, v, ok := first(getenv, EnvFailOpen); ok {
		b, known := ParseBool(v)
		if !known {
			k.Problems = append(k.Problems, fmt.Sprintf("%s=%q is not a yes/no value; fail-open stays off", name, v))
		} else {
			k.FailOpen.Set(b, name)
		}
	}
	if name, v, ok := first(getenv, EnvMCPConfig); ok {
		k.MCPConfig.Set(v, name)
	}
	for _, p := range []struct {
		names []string
		dst   *Value[string]
	}{{EnvLog, &k.LogPath}, {EnvEvents, &k.EventsPath}} {
		if name, v, ok := first(getenv, p.names); ok {
			path, err := ExpandPath(v, home, getenv)
			if err != nil {
				k.Problems = append(k.Problems, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			p.dst.Set(path, name)
		}
	}
	if k.MaxBackoff.V < k.Backoff.V {
		k.Problems = append(k.Problems, fmt.Sprintf("max backoff %s is below backoff %s; using %s for both", k.MaxBackoff.V, k.Backoff.V, k.Backoff.V))
		k.MaxBackoff.V = k.Backoff.V
	}
	return k
}

func first(getenv Getenv, names []string) (string, string, bool) {
	for _, n := range names {
		if v, ok := getenv(n); ok && strings.TrimSpace(v) != "" {
			return n, strings.TrimSpace(v), true
		}
	}
	return "", "", false
}

func (k *Knobs) duration(getenv Getenv, names []string, dst *Value[time.Duration]) {
	name, v, ok := first(getenv, names)
	if !ok {
		return
	}
	d, err := ParseDuration(v)
	if err != nil {
		k.Problems = append(k.Problems, fmt.Sprintf("%s=%q: %v; using %s", name, v, err, dst.V))
		return
	}
	dst.Set(d, name)
}

// ParseDuration reads "90s", "2m" or a bare number. A bare number is
// milliseconds, the unit of the article's *_MS variables (and of
// NIGHTWATCH_* ones given as a number).
func ParseDuration(v string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n <= 0 || n > float64(24*time.Hour/time.Millisecond) {
			return 0, fmt.Errorf("must be between 1 ms and 24 h")
		}
		return time.Duration(n * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("not a duration (use 90s, 2m or milliseconds)")
	}
	if d <= 0 || d > 24*time.Hour {
		return 0, fmt.Errorf("must be between 1 ms and 24 h")
	}
	return d, nil
}

// ParseMaxHold reads a hold bound: a duration as ParseDuration reads it,
// or 0 (never hold), at most healthcheck.MaxMaxHold.
func ParseMaxHold(v string) (time.Duration, error) {
	if d, err := time.ParseDuration(strings.TrimSpace(v)); strings.TrimSpace(v) == "0" || (err == nil && d == 0) {
		return 0, nil
	}
	d, err := ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, err
	}
	if d > healthcheck.MaxMaxHold {
		return 0, fmt.Errorf("must be at most %s (0 never holds)", healthcheck.MaxMaxHold)
	}
	return d, nil
}

// ParseBool reads the article's truthy words (1, true, yes) and their
// opposites; known is false for anything else.
func ParseBool(v string) (value, known bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off", "":
		return false, true
	}
	return false, false
}

// ExpandPath expands a leading ~ and $VAR / ${VAR} in a path the way a
// shell would, which launchd and systemd do not; then it makes the path
// absolute. A ~ left inside the path (the article's /Users/~/... typo) is
// an error, not a silent miss.
func ExpandPath(p, home string, getenv Getenv) (string, error) {
	if p == "~" {
		p = home
	} else if strings.HasPrefix(p, "~/") {
		p = filepath.Join(home, p[2:])
	}
	var missing []string
	p = expandVars(p, getenv, &missing)
	if len(missing) > 0 {
		return "", fmt.Errorf("path %q uses unset variable %s", p, strings.Join(missing, ", "))
	}
	if strings.Contains(p, "~") && strings.Contains(p, "/~") {
		return "", fmt.Errorf("path %q contains a ~ that no shell will expand; write the home folder out (%s)", p, home)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return abs, nil
}

func expandVars(s string, getenv Getenv, missing *[]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		j := i + 1
		braced := s[j] == '{'
		if braced {
			j++
		}
		start := j
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		name := s[start:j]
		if name == "" || (braced && (j >= len(s) || s[j] != '}')) {
			b.WriteByte(s[i])
			continue
		}
		if v, ok := getenv(name); ok {
			b.WriteString(v)
		} else {
			*missing = append(*missing, name)
		}
		if braced {
			j++
		}
		i = j - 1
	}
	return b.String()
}
