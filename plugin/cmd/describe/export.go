package describe

import (
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Writer lays out other commands' descriptions (tenant describe) as
// describe does: aligned fields, indented sections, tables with a rule.
type Writer struct{ w *writer }

// NewWriter writes to out; Flush when done.
func NewWriter(out io.Writer) *Writer { return &Writer{newWriter(out)} }

// Field writes "key: value" at level, <none> for an empty value.
func (w *Writer) Field(level int, key, value string) { w.w.field(level, key, value) }

// Line writes a line at level; args are made safe for the terminal.
func (w *Writer) Line(level int, format string, args ...any) { w.w.line(level, format, args...) }

// Table writes a titled table, or "title: <none>" without rows.
func (w *Writer) Table(level int, title string, header []string, rows [][]string) {
	w.w.table(level, title, header, rows)
}

// MapField writes a map one pair per line, sorted.
func (w *Writer) MapField(level int, key string, m map[string]string, sep string) {
	w.w.mapField(level, key, m, sep)
}

// Events writes events oldest first, as describe does.
func (w *Writer) Events(events []corev1.Event) { w.w.eventRows(events) }

// Flush writes what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }

// Timestamp is describe's time format.
func Timestamp(t metav1.Time) string { return timestamp(t) }

// Age is kubectl's AGE of t.
func Age(t time.Time) string { return age(t) }
