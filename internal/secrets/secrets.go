// Package secrets tells the redactor (internal/redact) every secret a
// nightwatch process can know of in its own environment, at the process's
// entry points (internal/serversecrets adds the servers of the MCP configs
// it reads, internal/batchsecrets a loaded batch's, so that the hook's hot
// path links neither a URL parser nor a batch loader). From then on every
// redact.String in the process removes them, whoever calls it: a server
// that prints another server's key cannot carry it into a cache, a log, a
// journal, a report or the model's deny reason.
//
// It only remembers; it never stores, prints or passes a value on.
package secrets

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

// RememberProcess remembers every sensitive-named variable of this
// process's environment (the agent's ANTHROPIC_API_KEY, the batch's keys a
// session hands its hook), and the value of every variable NamesVariable
// names (the batch's env_file variables, which a session's environment
// holds under names that may look plain: REGION_SECRET_PATH).
//
// It also remembers the values in the file FileVariable names: a
// session's environment leaves out what only servers use, so its hook and
// exec-servers learn those values from there. A file that cannot be read
// is skipped (the process then redacts what it knows).
func RememberProcess() { RememberEnviron(os.Environ()) }

// RememberEnviron is RememberProcess for an environment that is not this
// process's: a session's, whose hooks the night serves in its own process
// (hook/served).
func RememberEnviron(env []string) {
	redact.RememberEnv(env)
	rememberNamed(env)
	if path, ok := environ.Lookup(env)(FileVariable); ok && path != "" {
		RememberFile(path)
	}
}

// FileVariable names (a path, never a value) the owner-only file of a
// session's attempt that holds the values its environment left out
// (WriteFileData's form).
const FileVariable = "NIGHTWATCH_SECRETS_FILE"

// maxFile bounds the file: every variable of a batch fits many times.
const maxFile = 16 << 20

// fileData is the file's form: NAME=VALUE entries.
type fileData struct {
	Env []string `json:"env"`
}

// FileData is the content of a FileVariable file for env's entries.
func FileData(env []string) ([]byte, error) {
	return json.Marshal(fileData{Env: env})
}

// RememberFile remembers the values of a FileVariable file by
// RememberBatch's rule for env_file values: a secret's name whatever the
// value, a plain name's from MinPlainLen bytes, never a base variable's.
func RememberFile(path string) {
	data, err := atomicfile.Read(path, maxFile)
	if err != nil {
		return
	}
	var f fileData
	if json.Unmarshal(data, &f) != nil {
		return
	}
	var values []string
	for _, kv := range f.Env {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok, k == "", v == "", environ.IsBase(k):
		case redact.SensitiveName(k) || len(v) >= MinPlainLen:
			values = append(values, v)
		}
	}
	redact.Remember(values...)
}

// NamesVariable is the variable of a session's environment that names
// (never values) the batch's env_file variables, comma-separated, so that
// the hook inside the session remembers their values from its own
// environment whatever their names: the session's environment does not
// otherwise say which variables came from env_file.
const NamesVariable = "NIGHTWATCH_SECRET_NAMES"

// rememberNamed remembers, by RememberBatch's rule for env_file values,
// the value of each variable NamesVariable names in env.
func rememberNamed(env []string) {
	lookup := environ.Lookup(env)
	list, ok := lookup(NamesVariable)
	if !ok || list == "" {
		return
	}
	var values []string
	for _, k := range strings.Split(list, ",") {
		v, ok := lookup(k)
		switch {
		case k == "", !ok, environ.IsBase(k):
		case redact.SensitiveName(k) || len(v) >= MinPlainLen:
			values = append(values, v)
		}
	}
	redact.Remember(values...)
}

// MinPlainLen is the shortest env_file value of a plain name (not
// redact.SensitiveName) that is remembered: "info", "debug", "30000" or
// "C.UTF-8" are settings, and removing them from every text would blind
// the log ("level":"info") without hiding any key.
const MinPlainLen = 8
