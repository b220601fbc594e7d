package install

import (
	"slices"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// TestCronStarBit holds the copy of robfig/cron's unexported star bit to
// the library: a "*" day field carries it, a restricted one does not.
func TestCronStarBit(t *testing.T) {
	star, err := cron.ParseStandard("* * * * *")
	if err != nil {
		t.Fatal(err)
	}
	restricted, err := cron.ParseStandard("0 2 1 * 1")
	if err != nil {
		t.Fatal(err)
	}
	s, r := star.(*cron.SpecSchedule), restricted.(*cron.SpecSchedule)
	if s.Dom&cronStarBit == 0 || s.Dow&cronStarBit == 0 {
		t.Errorf("a * day field lacks bit 63: dom %b dow %b", s.Dom, s.Dow)
	}
	if r.Dom&cronStarBit != 0 || r.Dow&cronStarBit != 0 {
		t.Errorf("a restricted day field has bit 63: dom %b dow %b", r.Dom, r.Dow)
	}
}

// matches says whether the expanded schedule fires at t (a whole minute).
func (s *schedule) matches(t time.Time) bool {
	if !slices.Contains(s.minute, t.Minute()) || !slices.Contains(s.hour, t.Hour()) ||
		!slices.Contains(s.month, int(t.Month())) {
		return false
	}
	dom, dow := slices.Contains(s.dom, t.Day()), slices.Contains(s.dow, int(t.Weekday()))
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// TestScheduleFiresWhenTheDaemonDoes walks 70 days minute by minute: the
// expanded schedule the installers write from must fire exactly at the
// times robfig/cron (the daemon) fires, for every form of line.
func TestScheduleFiresWhenTheDaemonDoes(t *testing.T) {
	for _, line := range []string{
		"0 2 * * *", "*/15 * * * 1-5", "5/20 * * * *", "0 3 ? jan-mar MON-FRI",
		"0 9 1 * 1", "0 9 */2 * 1", "0 9 1,15 * *", "30 1 * * 0,6", "0 0 * * 0-6",
		"@weekly", "@monthly", "@daily", "@hourly", "0 12 31 * *", "0 12 * 2 *",
		"1-5,30-32/2 8-10 * * sun", "0 22 * * */2", "*,5 * * * 1",
	} {
		t.Run(line, func(t *testing.T) {
			s, err := parseSchedule(line)
			if err != nil {
				t.Fatal(err)
			}
			daemon, err := cron.ParseStandard(line)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Date(2027, time.January, 1, 0, 0, 0, 0, time.Local)
			end := start.Add(70 * 24 * time.Hour)
			next := daemon.Next(start.Add(-time.Minute))
			fired := 0
			for m := start; m.Before(end); m = m.Add(time.Minute) {
				want := next.Equal(m)
				if want {
					next = daemon.Next(m)
					fired++
				}
				if got := s.matches(m); got != want {
					t.Fatalf("%s: the installers' schedule fires %v, the daemon %v", m.Format(time.RFC1123), got, want)
				}
			}
			if fired == 0 {
				t.Errorf("never fired in 70 days: the case proves little")
			}
		})
	}
}
