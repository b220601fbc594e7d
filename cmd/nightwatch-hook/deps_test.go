package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// heavy are the packages the hook's hot path must not link: each costs
// every tool call its initialisation and its share of the executable
// (HTTP probes, TLS, the log, retries, batch files, schedules, a URL
// parser whose net/netip sets up package unique, crypto/rand's math/big),
// and the whole hook, which needs them, is a handoff away
// (hookexe.Handoff).
var heavy = []string{
	"net/http",
	"crypto/tls",
	"github.com/rs/zerolog",
	"github.com/hashicorp/go-retryablehttp",
	"gopkg.in/yaml.v3",
	"github.com/robfig/cron/v3",
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe",
	"github.com/nightwatch-dev/nightwatch/hook",
	// net/url brings net/netip, whose initialisation sets up package
	// unique (on Windows, golang.org/x/sys/windows links net, and so
	// netip, anyway).
	"net/url",
	"crypto/rand",
	"math/big",
	"github.com/nightwatch-dev/nightwatch/internal/redacturl",
	"github.com/nightwatch-dev/nightwatch/internal/serversecrets",
}

// TestHotPathLinksNoHeavyPackage: nightwatch-hook, and the packages its
// hot path is made of, import none of the heavy packages, directly or
// not, on every platform nightwatch builds for. A failure names who
// imports it.
func TestHotPathLinksNoHeavyPackage(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go list needs the go command: %v", err)
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, pkg := range []string{".", "../../hook/hot", "../../healthcheck", "../../internal/hookexe"} {
			t.Run(goos+"/"+pkg, func(t *testing.T) {
				cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, pkg)
				cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("go list -deps %s: %v", pkg, err)
				}
				importers := map[string][]string{}
				for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					path, imports, _ := strings.Cut(line, ":")
					for _, imp := range strings.Fields(imports) {
						importers[imp] = append(importers[imp], path)
					}
				}
				if len(importers) == 0 {
					t.Fatalf("go list -deps %s listed nothing", pkg)
				}
				for _, h := range heavy {
					if by := importers[h]; len(by) > 0 {
						t.Errorf("%s links %s (imported by %s)", pkg, h, strings.Join(by, ", "))
					}
				}
			})
		}
	}
}
