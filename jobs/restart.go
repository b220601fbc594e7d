package jobs

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/nightwatch-dev/nightwatch/internal/launch"
)

// The restart: block of a stdio server: how its exec-server restarts it
// and when it judges it hung.
//
//	restart:
//	  max: 5            # restarts within `within` before the server is given up (0: never restarted)
//	  within: 10m
//	  hang_after: 60s   # a request outstanding this long gets a ping; off: never judged hung
//	  ping_timeout: 20s # a ping unanswered this long means the server hangs
var restartFields = []string{"max", "within", "hang_after", "ping_timeout"}

// maxRestarts bounds restart.max: more restarts than this in one window
// is a crash loop, not a repair.
const maxRestarts = 100

// minGuardBound is the shortest within, hang_after or ping_timeout: below
// a second a busy host would judge a healthy server hung.
const minGuardBound = time.Second

// restart reads a server's restart: block.
func (l *loader) restart(n *yaml.Node, field string) launch.Bounds {
	var b launch.Bounds
	f := l.fields(n, field, restartFields...)
	if q, ok := f["max"]; ok {
		if v, ok := l.boundedInteger(q.val, field+".max", maxRestarts); ok {
			b.Restarts = &v
		}
	}
	bound := func(key string) time.Duration {
		q, ok := f[key]
		if !ok {
			return 0
		}
		d, ok := l.duration(q.val, field+"."+key)
		if ok && d < minGuardBound {
			l.problem(q.line(), field+"."+key, "%s is below %s", d, minGuardBound)
			return 0
		}
		return d
	}
	b.Within = bound("within")
	b.PingTimeout = bound("ping_timeout")
	if q, ok := f["hang_after"]; ok {
		if s, _, ok := l.str(q.val, field+".hang_after"); ok && isOff(s) {
			b.NoHang = true
		} else if ok {
			b.HangAfter = bound("hang_after")
		}
	}
	return b
}

// isOff: a bound written as off (or 0) turns the check off.
func isOff(s string) bool {
	switch strings.TrimSpace(s) {
	case "off", "0", "0s":
		return true
	}
	return false
}
