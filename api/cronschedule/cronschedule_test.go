package cronschedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-sched/kubectl-sched/api/cronschedule"
)

func TestParseRefusesWithTheField(t *testing.T) {
	cases := map[string]struct {
		schedule, tz string
		field, want  string
	}{
		"four fields":        {"0 2 * *", "", cronschedule.FieldSchedule, "expected exactly 5 fields"},
		"minute 60":          {"60 * * * *", "", cronschedule.FieldSchedule, "above maximum"},
		"reversed range":     {"5-3 * * * *", "", cronschedule.FieldSchedule, "beyond end of range"},
		"step zero":          {"*/0 * * * *", "", cronschedule.FieldSchedule, "step of range should be a positive number"},
		"seconds field":      {"0 0 2 * * *", "", cronschedule.FieldSchedule, "expected exactly 5 fields"},
		"every":              {"@every 1h", "", cronschedule.FieldSchedule, "@every is not supported"},
		"TZ prefix":          {"TZ=UTC 0 2 * * *", "", cronschedule.FieldSchedule, "set spec.timeZone"},
		"unknown notation":   {"@fortnightly", "", cronschedule.FieldSchedule, "unrecognized descriptor"},
		"February 30":        {"0 0 30 2 *", "", cronschedule.FieldSchedule, "never matches a date"},
		"empty":              {"  ", "", cronschedule.FieldSchedule, "a schedule is required"},
		"an empty list item": {"0 0 1,,2 * *", "", cronschedule.FieldSchedule, `the day of month ("1,,2") has an empty item`},
		"? as the minute":    {"? * * * *", "", cronschedule.FieldSchedule, "the minute (\"?\") may not be ?"},
		"unknown time zone":  {"0 2 * * *", "Mars/Olympus_Mons", cronschedule.FieldTimeZone, `unknown time zone "Mars/Olympus_Mons"`},
		"Local":              {"0 2 * * *", "Local", cronschedule.FieldTimeZone, "Local is not allowed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := cronschedule.Parse(tc.schedule, tc.tz)
			var e *cronschedule.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q, %q) = %v, want an *Error", tc.schedule, tc.tz, err)
			}
			if e.Field != tc.field || !strings.Contains(e.Detail, tc.want) {
				t.Errorf("error %q, want field %s and %q", err, tc.field, tc.want)
			}
		})
	}
}

func date(s string, loc *time.Location) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNextInTheTimeZone(t *testing.T) {
	berlin, err := cronschedule.Location("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		schedule, tz string
		after        time.Time
		want         time.Time
	}{
		"daily at 2 in UTC by default": {"0 2 * * *", "", date("2026-11-26 10:00", time.UTC), date("2026-11-27 02:00", time.UTC)},
		"daily at 2 in Berlin":         {"0 2 * * *", "Europe/Berlin", date("2026-11-26 10:00", time.UTC), date("2026-11-27 01:00", time.UTC)},
		// 02:30 does not exist in Berlin on 29 March 2026 (clocks jump from
		// 02:00 to 03:00): that day is skipped.
		"a time the spring change skips": {"30 2 * * *", "Europe/Berlin", date("2026-03-28 12:00", berlin), date("2026-03-30 02:30", berlin)},
		"names and ranges":               {"0 9 * JAN-MAR MON-FRI", "", date("2026-01-02 10:00", time.UTC), date("2026-01-05 09:00", time.UTC)},
		"a descriptor":                   {"@monthly", "", date("2026-01-02 10:00", time.UTC), date("2026-02-01 00:00", time.UTC)},
		"surrounding spaces":             {"  */15 *  * * *  ", "", date("2026-01-02 10:01", time.UTC), date("2026-01-02 10:15", time.UTC)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := cronschedule.Parse(tc.schedule, tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(tc.after); !got.Equal(tc.want) {
				t.Errorf("Next(%s) = %s, want %s", tc.after, got, tc.want)
			}
		})
	}
}

func TestLatest(t *testing.T) {
	hourly, err := cronschedule.Parse("0 * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	weekdays, err := cronschedule.Parse("0 9 * * 1-5", "")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		s           *cronschedule.Schedule
		after, now  string
		limit       int
		want        string // "" for none
		wantCount   int
		countCapped bool
	}{
		"none yet":               {hourly, "2026-01-01 10:00", "2026-01-01 10:59", 100, "", 0, false},
		"exactly on time":        {hourly, "2026-01-01 10:00", "2026-01-01 11:00", 100, "2026-01-01 11:00", 1, false},
		"the after time is out":  {hourly, "2026-01-01 11:00", "2026-01-01 11:30", 100, "", 0, false},
		"three missed":           {hourly, "2026-01-01 10:00", "2026-01-01 13:30", 100, "2026-01-01 13:00", 3, false},
		"a year missed":          {hourly, "2025-01-01 10:00", "2026-01-01 13:30", 100, "2026-01-01 13:00", 101, true},
		"over a weekend, capped": {weekdays, "2025-12-01 00:00", "2026-01-05 08:00", 3, "2026-01-02 09:00", 4, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			latest, count := tc.s.Latest(date(tc.after, time.UTC), date(tc.now, time.UTC), tc.limit)
			var want time.Time
			if tc.want != "" {
				want = date(tc.want, time.UTC)
			}
			if !latest.Equal(want) || count != tc.wantCount {
				t.Errorf("Latest = %s, %d; want %s, %d", latest, count, want, tc.wantCount)
			}
			if capped := count > tc.limit; capped != tc.countCapped {
				t.Errorf("count %d past the limit %d: %v, want %v", count, tc.limit, capped, tc.countCapped)
			}
		})
	}
}
