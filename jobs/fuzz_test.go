package jobs

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: no input makes Load panic or hang. Seeds are the files of
// testdata, the quickstart's batch and every invalid case of the table.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	seeds = append(seeds, "../examples/batches.yaml")
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// The alias bomb is tested by TestLoadTestdata; as a seed its
		// slow runs would stall the fuzzer's minimization.
		if len(data) <= 8<<10 {
			f.Add(data)
		}
	}
	f.Add([]byte(fullBatch))
	f.Add([]byte(sessionEnvServers + "session_env: [GH_TOKEN]\njobs:\n  - {name: a, prompt: hi, session_env: [NOTES_KEY, GH_TOKNE]}\n"))
	f.Add([]byte("version: 1\nname: n\nagent: {command: /bin/true}\nservers:\n  notes:\n    command: /bin/true\n    restart: {max: 2, within: 5m, hang_after: off, ping_timeout: 30s}\njobs:\n  - {name: a, prompt: hi, servers: [notes]}\n"))
	for _, tc := range invalidCases {
		f.Add([]byte(tc.yaml))
	}

	sb := newSandbox(f)
	writeFile(f, sb.dir, "config.env", fullEnvFile)
	writeFile(f, sb.dir, "p.md", "a prompt")
	env := environ(sb.env)
	// The fuzz function runs sequentially within a worker process: one
	// file per process keeps iterations cheap (a TempDir per input costs
	// more than the Load).
	path := filepath.Join(sb.dir, "batch.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Load(path, env)
		if err == nil && (b == nil || len(b.Jobs) == 0 || b.Agent.Command == "") {
			t.Fatalf("Load returned no error and an unusable batch: %+v", b)
		}
	})
}
