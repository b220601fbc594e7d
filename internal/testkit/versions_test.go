package testkit

import (
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/clirange"
)

// TestPinnedVersionsAreTheTestedRange keeps the product's idea of the tested
// range (clirange, which doctor reports against) equal to what the suite
// really runs: the oldest and newest claude-code-<version> pins.
func TestPinnedVersionsAreTheTestedRange(t *testing.T) {
	versions := ClaudeVersions(t)
	if len(versions) < 2 {
		t.Fatalf("pinned Claude Code versions %v: the range needs its oldest and newest", versions)
	}
	if got := versions[0]; got != clirange.Oldest {
		t.Errorf("oldest pinned version %s, clirange.Oldest %s", got, clirange.Oldest)
	}
	if got := versions[len(versions)-1]; got != clirange.Newest {
		t.Errorf("newest pinned version %s, clirange.Newest %s", got, clirange.Newest)
	}
}
