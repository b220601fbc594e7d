package install

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// schedule is a batch's cron line, expanded: each field the sorted set of
// values it matches. The line is read by robfig/cron's standard parser, the
// one the daemon (daemon.Run) and the batch loader use, and the sets
// come from its parsed bit fields; the installers translate them into
// launchd, systemd and crontab syntax, so the three agree with the daemon on
// what the line means and refuse what it refuses.
type schedule struct {
	minute, hour, dom, month, dow []int
	// domStar and dowStar follow cron's day rule: when both day fields are
	// restricted, a day matches if either does; otherwise both must.
	domStar, dowStar bool
	tz               string // from CRON_TZ= / TZ=; "" = local time
}

// field describes one position of the 5-field line.
type field struct {
	name     string
	min, max int
}

var (
	fMinute = field{"minute", 0, 59}
	fHour   = field{"hour", 0, 23}
	fDom    = field{"day of month", 1, 31}
	fMonth  = field{"month", 1, 12}
	fDow    = field{"day of week", 0, 6}
)

// cronStarBit is the bit robfig/cron sets in a field written "*" or "?"
// (without a step above 1); its day rule keys on it. robfig keeps the
// constant unexported; TestCronStarBit holds this copy to it.
const cronStarBit = 1 << 63

// parseCron is the daemon's parser.
var parseCron = cron.ParseStandard

// parseSchedule reads a cron line with the daemon's parser and expands the
// parsed schedule. A line the daemon refuses is refused with its error; an
// @every interval, which the daemon runs but a calendar cannot express, is
// refused with the reason.
func parseSchedule(line string) (*schedule, error) {
	if strings.TrimSpace(line) == "" {
		return nil, fmt.Errorf("the batch has no schedule: add `schedule: \"0 2 * * *\"` (a cron line) to install it")
	}
	parsed, err := parseCronSafely(line)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", line, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("schedule %q: an @every interval has no calendar form; write it as a cron line (\"*/30 * * * *\")", line)
	}
	s := &schedule{
		minute:  values(spec.Minute, fMinute),
		hour:    values(spec.Hour, fHour),
		dom:     values(spec.Dom, fDom),
		month:   values(spec.Month, fMonth),
		dow:     values(spec.Dow, fDow),
		domStar: spec.Dom&cronStarBit != 0,
		dowStar: spec.Dow&cronStarBit != 0,
	}
	if spec.Location != nil && spec.Location != time.Local {
		s.tz = spec.Location.String()
	}
	return s, nil
}

// parseCronSafely is parseCron with its panics ("TZ=x" with no space) turned
// into the error the batch loader reports for them.
func parseCronSafely(line string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("unreadable")
		}
	}()
	return parseCron(line)
}

// values lists the values of f whose bits are set in a robfig field.
func values(bits uint64, f field) []int {
	var out []int
	for v := f.min; v <= f.max; v++ {
		if bits&(1<<uint(v)) != 0 {
			out = append(out, v)
		}
	}
	return out
}

// full reports whether vals is every value of f.
func full(vals []int, f field) bool { return len(vals) == f.max-f.min+1 }

// dayAlternatives splits the day rule into sets that are each an AND of
// their fields: one (dom AND dow) when either day field is "*", else two
// (dom alone, dow alone) whose union is cron's OR. launchd and systemd only
// know AND within one entry, so the OR becomes two entries.
func (s *schedule) dayAlternatives() (alts [][2][]int) {
	if s.domStar || s.dowStar {
		dom, dow := s.dom, s.dow
		if s.domStar {
			dom = nil
		}
		if s.dowStar {
			dow = nil
		}
		return [][2][]int{{dom, dow}}
	}
	return [][2][]int{{s.dom, nil}, {nil, s.dow}}
}

// maxCalendarEntries bounds the launchd expansion: "*/5 9-17 * * 1-5" is
// 540 dicts, still fine; a line that needs more is better as fewer rules.
const maxCalendarEntries = 2000

// launchdIntervals expands the schedule into StartCalendarInterval dicts.
// A key left out of a dict is launchd's wildcard, so a field that matches
// every value is omitted; the others become the cartesian product.
func (s *schedule) launchdIntervals() ([]map[string]int, error) {
	if s.tz != "" {
		return nil, fmt.Errorf("schedule: launchd runs StartCalendarInterval in local time; drop the %s time zone or set the Mac's", s.tz)
	}
	opt := func(vals []int, f field) []int {
		if vals == nil || full(vals, f) {
			return nil
		}
		return vals
	}
	var out []map[string]int
	for _, alt := range s.dayAlternatives() {
		keys := []struct {
			key  string
			vals []int
		}{
			{"Minute", opt(s.minute, fMinute)},
			{"Hour", opt(s.hour, fHour)},
			{"Day", opt(alt[0], fDom)},
			{"Month", opt(s.month, fMonth)},
			{"Weekday", opt(alt[1], fDow)},
		}
		dicts := []map[string]int{{}}
		for _, k := range keys {
			if k.vals == nil {
				continue
			}
			next := make([]map[string]int, 0, len(dicts)*len(k.vals))
			for _, d := range dicts {
				for _, v := range k.vals {
					nd := make(map[string]int, len(d)+1)
					for dk, dv := range d {
						nd[dk] = dv
					}
					nd[k.key] = v
					next = append(next, nd)
				}
			}
			dicts = next
			if len(out)+len(dicts) > maxCalendarEntries {
				return nil, fmt.Errorf("schedule: expands to more than %d launchd calendar entries; use a coarser schedule", maxCalendarEntries)
			}
		}
		out = append(out, dicts...)
	}
	return out, nil
}

var weekdayNames = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// onCalendar converts the schedule into systemd OnCalendar= values, one per
// day alternative: "*/15 * * * 1-5" → "Mon..Fri *-*-* *:00/15:00".
func (s *schedule) onCalendar() []string {
	var out []string
	for _, alt := range s.dayAlternatives() {
		var b strings.Builder
		if dow := alt[1]; dow != nil && !full(dow, fDow) {
			// systemd orders the week Mon..Sun: Sunday (0) goes last so
			// that 0-5 becomes "Mon..Fri,Sun", not a backwards range.
			week := make([]int, len(dow))
			for i, d := range dow {
				week[i] = d
				if d == 0 {
					week[i] = 7
				}
			}
			slices.Sort(week)
			b.WriteString(calendarField(week, 1, 7, func(v int) string { return weekdayNames[v] }, false))
			b.WriteString(" ")
		}
		num := func(v int) string { return fmt.Sprintf("%02d", v) }
		dom := alt[0]
		if dom == nil {
			dom = s.dom[:0:0] // every day
		}
		fmt.Fprintf(&b, "*-%s-%s %s:%s:00",
			calendarField(s.month, fMonth.min, fMonth.max, num, true),
			calendarField(dom, fDom.min, fDom.max, num, true),
			calendarField(s.hour, fHour.min, fHour.max, num, true),
			calendarField(s.minute, fMinute.min, fMinute.max, num, true))
		if s.tz != "" {
			b.WriteString(" " + s.tz)
		}
		out = append(out, b.String())
	}
	return out
}

// calendarField writes a set in systemd's calendar syntax: "*" for every
// value (or an empty set), "start/step" for a progression that runs to the
// end of the field, otherwise a comma list of values and "a..b" runs.
func calendarField(vals []int, lo, hi int, show func(int) string, steps bool) string {
	if len(vals) == 0 || len(vals) == hi-lo+1 {
		return "*"
	}
	// Two values make a progression only from the field's start
	// ("00/30"); "05/45" for {5, 50} would just be obscure.
	if steps && (len(vals) > 2 || len(vals) == 2 && vals[0] == lo) {
		if step := vals[1] - vals[0]; step > 1 && isProgression(vals, step) && vals[len(vals)-1]+step > hi {
			return fmt.Sprintf("%s/%d", show(vals[0]), step)
		}
	}
	return joinRuns(vals, show, "..")
}

func isProgression(vals []int, step int) bool {
	for i := 1; i < len(vals); i++ {
		if vals[i]-vals[i-1] != step {
			return false
		}
	}
	return true
}

// joinRuns writes sorted values as a list, runs of three or more as a
// range with sep.
func joinRuns(vals []int, show func(int) string, sep string) string {
	var parts []string
	for i := 0; i < len(vals); {
		j := i
		for j+1 < len(vals) && vals[j+1] == vals[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, show(vals[i])+sep+show(vals[j]))
		case j > i:
			parts = append(parts, show(vals[i]), show(vals[j]))
		default:
			parts = append(parts, show(vals[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// cronFields writes the schedule back as a portable 5-field crontab line:
// numbers only (some crons take names only as single values), and no
// robfig-only forms ("?", "N/step"). A day field that robfig reads as
// restricted is never written starting with "*", because Vixie cron treats
// any field starting with "*" as unrestricted in its day rule.
func (s *schedule) cronFields() (string, error) {
	if s.tz != "" {
		return "", fmt.Errorf("schedule: a crontab line cannot carry the %s time zone portably; drop it or use systemd", s.tz)
	}
	num := strconv.Itoa
	one := func(vals []int, f field, star bool) string {
		if star {
			return "*"
		}
		if len(vals) >= 2 {
			if step := vals[1] - vals[0]; step > 1 && isProgression(vals, step) && vals[len(vals)-1]+step > f.max && vals[0] == f.min {
				if f.name == fDom.name || f.name == fDow.name {
					return fmt.Sprintf("%d-%d/%d", f.min, f.max, step)
				}
				return fmt.Sprintf("*/%d", step)
			}
		}
		if full(vals, f) && f.name != fDom.name && f.name != fDow.name {
			return "*"
		}
		return joinRuns(vals, num, "-")
	}
	return strings.Join([]string{
		one(s.minute, fMinute, false),
		one(s.hour, fHour, false),
		one(s.dom, fDom, s.domStar),
		one(s.month, fMonth, false),
		one(s.dow, fDow, s.dowStar),
	}, " "), nil
}
