package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

// LoadBatch writes yaml as dir/batch.yaml and loads it, as `nightwatch run`
// would (environment references resolved from the test's environment).
func LoadBatch(t testing.TB, dir, yaml string) *jobs.Batch {
	t.Helper()
	path := filepath.Join(dir, "batch.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := jobs.Load(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
