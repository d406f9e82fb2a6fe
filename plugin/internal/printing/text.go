package printing

import "strings"

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

// OneLine keeps a multi-line message in its table row.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
