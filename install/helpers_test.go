package install

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

// fixture is a batch on disk with a fake nightwatch binary next to it.
type fixture struct {
	root, home, bin string
	batch           *jobs.Batch
	env             map[string]string // the installer's environment
}

// newFixture writes a batch file into a folder named dirName (which may
// hold spaces, quotes, "&"…) and a nightwatch stand-in that records its
// arguments and environment to <root>/ran.
func newFixture(t *testing.T, dirName string) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{root: root, home: filepath.Join(root, "home")}
	dir := filepath.Join(root, dirName)
	for _, d := range []string{dir, f.home, filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.bin = filepath.Join(root, "bin", "nightwatch")
	if runtime.GOOS == "windows" {
		f.bin += ".exe" // an executable there is named so, not marked
	}
	script := "#!/bin/sh\n{ pwd; for a in \"$@\"; do echo \"arg=$a\"; done; env; } > \"$(dirname \"$0\")/../ran\"\n"
	if err := os.WriteFile(f.bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "night.yaml")
	yaml := "name: nightly\nschedule: \"0 2 * * *\"\nservers:\n  gh:\n    command: gh-mcp\n    env: {GITHUB_TOKEN: \"${GITHUB_TOKEN}\", GH_HOST: \"${GH_HOST}\"}\n    requires_env: [API_KEY]\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	f.batch = &jobs.Batch{
		File: file, Dir: dir, Name: "nightly", Schedule: "0 2 * * *",
		StateDir: filepath.Join(dir, ".nightwatch"),
		Env:      map[string]string{"LANG": "C.UTF-8"},
		Servers:  []*jobs.Server{{Name: "gh", RequiresEnv: []string{"API_KEY"}}},
	}
	f.env = map[string]string{
		"PATH":         "/usr/local/bin:/usr/bin:/bin",
		"API_KEY":      "sk-test-4f9a2c1e8b7d",
		"GITHUB_TOKEN": "ghp_test_0123456789abcdef",
		"GH_HOST":      "github.example.com", // plain, taken from the shell: written
		"UNRELATED":    "not referenced by the batch",
	}
	return f
}

func (f *fixture) options() Options {
	return Options{
		Binary: f.bin, Batch: f.batch, Home: f.home, UID: 501,
		Getenv: func(k string) (string, bool) { v, ok := f.env[k]; return v, ok },
	}
}

func (f *fixture) plan(t *testing.T, kind Kind) *Plan {
	t.Helper()
	p, err := PlanInstall(kind, f.options())
	if err != nil {
		t.Fatalf("PlanInstall(%s): %v", kind, err)
	}
	return p
}

// recorder is a run function for Apply that records the commands.
type recorder struct {
	mu   sync.Mutex
	runs [][]string
	fail func(argv []string) error
}

func (r *recorder) run(_ context.Context, argv []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, argv)
	if r.fail != nil {
		return r.fail(argv)
	}
	return nil
}

// decodePlist reads a property list into Go values: dict → map[string]any,
// array → []any, string, integer → int, true/false → bool. It refuses any
// other element, so a stray tag in the generated file fails the test.
func decodePlist(t *testing.T, data []byte) map[string]any {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(data)))
	d.Strict = true
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("plist: no <plist>: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "plist" {
				t.Fatalf("plist: root is <%s>", se.Name.Local)
			}
			break
		}
	}
	v, err := plistValue(d)
	if err != nil {
		t.Fatalf("plist: %v\n%s", err, data)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("plist: top value is %T", v)
	}
	return m
}

// plistValue reads the next value element (and its end).
func plistValue(d *xml.Decoder) (any, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.CharData:
			if strings.TrimSpace(string(tok)) != "" {
				return nil, fmt.Errorf("stray text %q", tok)
			}
		case xml.EndElement:
			return endMarker{}, nil
		case xml.StartElement:
			switch tok.Name.Local {
			case "string", "integer":
				var s string
				if err := d.DecodeElement(&s, &tok); err != nil {
					return nil, err
				}
				if tok.Name.Local == "integer" {
					return strconv.Atoi(s)
				}
				return s, nil
			case "true", "false":
				if err := d.Skip(); err != nil {
					return nil, err
				}
				return tok.Name.Local == "true", nil
			case "array":
				var out []any
				for {
					v, err := plistValue(d)
					if err != nil {
						return nil, err
					}
					if _, end := v.(endMarker); end {
						return out, nil
					}
					out = append(out, v)
				}
			case "dict":
				out := map[string]any{}
				for {
					k, err := plistValue(d)
					if err != nil {
						return nil, err
					}
					if _, end := k.(endMarker); end {
						return out, nil
					}
					key, ok := k.(plistKey)
					if !ok {
						return nil, fmt.Errorf("dict entry without <key>: %v", k)
					}
					v, err := plistValue(d)
					if err != nil {
						return nil, err
					}
					if _, dup := out[string(key)]; dup {
						return nil, fmt.Errorf("duplicate key %s", key)
					}
					out[string(key)] = v
				}
			case "key":
				var s string
				if err := d.DecodeElement(&s, &tok); err != nil {
					return nil, err
				}
				return plistKey(s), nil
			default:
				return nil, fmt.Errorf("unexpected <%s>", tok.Name.Local)
			}
		}
	}
}

type (
	endMarker struct{}
	plistKey  string
)

// parseUnit reads a systemd unit as section → key → values (a key may
// repeat: Environment=, OnCalendar=).
func parseUnit(t *testing.T, text string) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	var sec string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			sec = line[1 : len(line)-1]
			out[sec] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || sec == "" {
				t.Fatalf("unit line %d: %q is not key=value in a section", i+1, line)
			}
			out[sec][k] = append(out[sec][k], v)
		}
	}
	return out
}

func printed(p *Plan) string {
	var b strings.Builder
	p.Print(&b)
	return b.String()
}
