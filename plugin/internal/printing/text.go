package printing

import (
	"fmt"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// OrNone is s, or "<none>" when empty, as kubectl describe shows it.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// OrDash is s, or "-" when empty, for table cells.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// FormatDuration writes a duration the short way, in the live workflow
// view and in describe alike: 45s, 3m05s, 2h07m.
func FormatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Width is how many terminal cells s takes: two for a wide character (CJK,
// most emoji), none for a combining mark or a colour escape. TableWriter
// lays out with the same measure, so a line cut with Truncate and a table
// row agree on what fits.
func Width(s string) int { return twwidth.Width(s) }

// Truncate shortens s to at most n cells, marking a cut with "…".
func Truncate(s string, n int) string {
	if Width(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	return twwidth.Truncate(s, n, "…")
}
