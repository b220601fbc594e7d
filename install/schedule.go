package install

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// schedule is a batch's cron line, expanded: each field the sorted set of
// values it matches. The daemon reads the line with robfig/cron; the
// installers translate it into launchd, systemd and crontab syntax from this
// one reading, so the three agree with the daemon on what the line means.
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
	names    []string // names[i] is value min+i ("jan", "sun"); nil = numbers only
}

var (
	fMinute = field{"minute", 0, 59, nil}
	fHour   = field{"hour", 0, 23, nil}
	fDom    = field{"day of month", 1, 31, nil}
	fMonth  = field{"month", 1, 12, []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	fDow    = field{"day of week", 0, 6, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}}
)

// descriptors are robfig/cron's predefined schedules that have a 5-field
// equivalent. @every has none: an interval is not a calendar time.
var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// parseSchedule reads the subset of robfig/cron's standard syntax that a
// calendar can express: numbers, names, *, ?, lists, ranges and steps, and
// the descriptors above. Anything else is refused with the reason.
func parseSchedule(line string) (*schedule, error) {
	s := &schedule{}
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, fmt.Errorf("the batch has no schedule: add `schedule: \"0 2 * * *\"` (a cron line) to install it")
	}
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			tz, spec, _ := strings.Cut(rest, " ")
			s.tz, line = tz, strings.TrimSpace(spec)
		}
	}
	if strings.HasPrefix(line, "@every") {
		return nil, fmt.Errorf("schedule %q: an @every interval has no calendar form; write it as a cron line (\"*/30 * * * *\")", line)
	}
	if strings.HasPrefix(line, "@") {
		d, ok := descriptors[line]
		if !ok {
			return nil, fmt.Errorf("schedule %q: unknown descriptor", line)
		}
		line = d
	}
	parts := strings.Fields(line)
	if len(parts) != 5 {
		return nil, fmt.Errorf("schedule %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", line, len(parts))
	}
	var err error
	if s.minute, _, err = parseField(parts[0], fMinute); err == nil {
		if s.hour, _, err = parseField(parts[1], fHour); err == nil {
			if s.dom, s.domStar, err = parseField(parts[2], fDom); err == nil {
				if s.month, _, err = parseField(parts[3], fMonth); err == nil {
					s.dow, s.dowStar, err = parseDow(parts[4])
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", line, err)
	}
	return s, nil
}

// parseDow reads the day of week, accepting 7 for Sunday as most crons do.
func parseDow(text string) ([]int, bool, error) {
	f := fDow
	f.max = 7
	vals, star, err := parseField(text, f)
	if err != nil {
		return nil, false, err
	}
	set := map[int]bool{}
	for _, v := range vals {
		set[v%7] = true
	}
	out := make([]int, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, star, nil
}

// parseField expands one field into its sorted values. star is robfig's
// rule: the field is "*" or "?" without a step greater than 1.
func parseField(text string, f field) (vals []int, star bool, err error) {
	set := map[int]bool{}
	star = true
	for _, part := range strings.Split(text, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			if step, err = strconv.Atoi(stepText); err != nil || step < 1 {
				return nil, false, fmt.Errorf("%s: bad step %q", f.name, stepText)
			}
		}
		var lo, hi int
		switch {
		case rng == "*" || rng == "?":
			lo, hi = f.min, f.max
			if f.name == fDow.name {
				hi = 6 // "*" is 0-6; 7 is only an alias
			}
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			if lo, err = f.value(a); err == nil {
				hi, err = f.value(b)
			}
			if err != nil {
				return nil, false, err
			}
			if lo > hi {
				return nil, false, fmt.Errorf("%s: range %q runs backwards", f.name, rng)
			}
		default:
			if lo, err = f.value(rng); err != nil {
				return nil, false, err
			}
			hi = lo
			if hasStep { // robfig: "N/step" means N through the maximum
				hi = f.max
				if f.name == fDow.name {
					hi = 6
				}
			}
		}
		if !(rng == "*" || rng == "?") || step > 1 {
			star = false
		}
		for v := lo; v <= hi; v += step {
			set[v] = true
		}
	}
	for v := range set {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	return vals, star, nil
}

// value reads a number or a name of the field and checks its range.
func (f field) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", f.name, s)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%s: %d is outside %d-%d", f.name, v, f.min, f.max)
	}
	return v, nil
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
