package session

import (
	"path/filepath"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

// maxFinal bounds the final message kept beside the stream: the report
// links to it, a reader opens it on a phone.
const maxFinal = 64 << 10

// writeFinal keeps the session's final message (its result event's text,
// redacted) in the attempt folder, for the morning report to link to. No
// result, no file; a write that fails costs the link only. Not fsynced,
// as the stream log it is taken from is not: a person reads it, nothing
// the night decides or resumes from (the outcome is in the journal); a
// crash of the machine costs the link at worst. It was two fsyncs (file
// and folder) at the end of every real session.
func writeFinal(dir string, r *ResultEvent) {
	if dir == "" || r == nil || r.Result == "" {
		return
	}
	msg := r.Result
	if len(msg) > maxFinal {
		msg = strings.ToValidUTF8(msg[:maxFinal], "") + "\n\n[cut by nightwatch at 64 KiB; the whole text is in " + statedir.AttemptStream + "]"
	}
	_ = atomicfile.WriteFileVolatile(filepath.Join(dir, statedir.AttemptFinal), []byte(redact.String(msg)+"\n"), atomicfile.Mode)
}
