// Package cronschedule reads a CronWorkflow's schedule and time zone, and
// finds its schedule times: one implementation for the operator, which
// starts the runs, and the plugin, which checks a schedule before it
// submits one, so what one accepts the other does too. The cron syntax is
// github.com/robfig/cron's standard parser, as Kubernetes' CronJob
// controller uses; the CRD's rules (api/v1alpha1) re-state what they can
// of it.
package cronschedule

import (
	"fmt"
	"slices"
	"strings"
	"time"
	// The operator's image and a user's machine may have no zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Error says which field is wrong and why.
type Error struct {
	// Field is spec.schedule or spec.timeZone.
	Field string
	// Detail says what is wrong and what to do.
	Detail string
}

func (e *Error) Error() string { return e.Field + ": " + e.Detail }

// The fields an Error names.
const (
	FieldSchedule = "spec.schedule"
	FieldTimeZone = "spec.timeZone"
)

// Schedule is a parsed schedule in its time zone.
type Schedule struct {
	spec *cron.SpecSchedule
}

// Parse reads schedule in timeZone (IANA; "" is UTC).
func Parse(schedule, timeZone string) (*Schedule, error) {
	loc, err := Location(timeZone)
	if err != nil {
		return nil, err
	}
	trimmed := strings.TrimSpace(schedule)
	switch {
	case trimmed == "":
		return nil, &Error{FieldSchedule, `a schedule is required, such as "0 2 * * *" (every day at 02:00)`}
	case strings.Contains(trimmed, "TZ="):
		return nil, &Error{FieldSchedule, fmt.Sprintf("%q: TZ= and CRON_TZ= are not supported in the schedule; set spec.timeZone (--time-zone) instead", schedule)}
	case strings.HasPrefix(trimmed, "@every"):
		return nil, &Error{FieldSchedule, fmt.Sprintf("%q: @every is not supported; write the interval as five fields, such as \"*/15 * * * *\" for every 15 minutes", schedule)}
	}
	if err := strict(trimmed); err != nil {
		return nil, &Error{FieldSchedule, fmt.Sprintf("%q: %s", schedule, err)}
	}
	parsed, err := cron.ParseStandard(trimmed)
	if err != nil {
		return nil, &Error{FieldSchedule, fmt.Sprintf("%q is not a cron schedule: %v; write five fields (minute hour day-of-month month day-of-week), such as \"0 2 * * *\", or @hourly, @daily, @weekly, @monthly, @yearly", schedule, err)}
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, &Error{FieldSchedule, fmt.Sprintf("%q is not a calendar schedule; write five fields, such as \"0 2 * * *\"", schedule)}
	}
	spec.Location = loc
	s := &Schedule{spec: spec}
	// The parser searches five years ahead; a date no year has (February
	// 30) is never found.
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, &Error{FieldSchedule, fmt.Sprintf("%q never matches a date (such as February 30); check the day of month and the month", schedule)}
	}
	return s, nil
}

// fieldNames name the five fields in messages.
var fieldNames = []string{"minute", "hour", "day of month", "month", "day of week"}

// strict refuses what the parser lets through and the CRD does not: an
// empty item in a list, and ? outside the two day fields.
func strict(schedule string) error {
	if strings.HasPrefix(schedule, "@") {
		return nil
	}
	fields := strings.Fields(schedule)
	if len(fields) != len(fieldNames) {
		return nil // the parser says how many it expects
	}
	for i, f := range fields {
		if slices.Contains(strings.Split(f, ","), "") {
			return fmt.Errorf("the %s (%q) has an empty item in its list; separate items by one comma", fieldNames[i], f)
		}
		if strings.Contains(f, "?") && i != 2 && i != 4 {
			return fmt.Errorf("the %s (%q) may not be ?; ? stands for any day, in the day of month or day of week", fieldNames[i], f)
		}
	}
	return nil
}

// Location is the time zone named tz ("" is UTC).
func Location(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if strings.EqualFold(tz, "Local") {
		return nil, &Error{FieldTimeZone, "Local is not allowed (it would be the operator's own zone); name a time zone such as Europe/Berlin or UTC"}
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, &Error{FieldTimeZone, fmt.Sprintf("unknown time zone %q; use an IANA name such as Europe/Berlin, America/New_York or UTC (the list: https://www.iana.org/time-zones)", tz)}
	}
	return loc, nil
}

// Next is the first schedule time after t, zero if there is none.
func (s *Schedule) Next(t time.Time) time.Time { return s.spec.Next(t) }

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.spec.Location }

// Latest returns the last schedule time in (after, until] (zero when there
// is none) and how many there are, counted up to limit+1: past limit the
// count stops and the last is found by looking back from until, so a
// schedule that missed years of minutes costs no more than one that
// missed a few.
func (s *Schedule) Latest(after, until time.Time, limit int) (latest time.Time, count int) {
	for t := s.Next(after); !t.IsZero() && !t.After(until); t = s.Next(t) {
		latest, count = t, count+1
		if count > limit {
			return s.lastBefore(after, until), count
		}
	}
	return latest, count
}

// lastBefore finds the last schedule time in (floor, until] in windows
// ending at until that double until one holds a time.
func (s *Schedule) lastBefore(floor, until time.Time) time.Time {
	for window := time.Minute; ; window *= 2 {
		start := until.Add(-window)
		if !start.After(floor) {
			start = floor
		}
		var last time.Time
		for t := s.Next(start); !t.IsZero() && !t.After(until); t = s.Next(t) {
			last = t
		}
		if !last.IsZero() || start.Equal(floor) {
			return last
		}
	}
}
