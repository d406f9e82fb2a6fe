package printing

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DescribeWriter lays out a description as kubectl describe does, for
// describe and tenant describe: it indents by level and aligns
// tab-separated cells, as kubectl describe's PrefixWriter does (same
// tabwriter settings).
type DescribeWriter struct {
	tw *tabwriter.Writer
}

// NewDescribeWriter writes to out; Flush when done.
func NewDescribeWriter(out io.Writer) *DescribeWriter {
	return &DescribeWriter{tw: tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)}
}

// Line writes one line. The format is the plugin's; every argument comes
// from the cluster (annotations, messages, outputs, env values) and is made
// safe for the terminal and for the tabwriter: no control, tab or newline
// (Safe).
func (w *DescribeWriter) Line(level int, format string, args ...any) {
	fmt.Fprintf(w.tw, strings.Repeat("  ", level)+format+"\n", Safe(args...)...)
}

// Flush writes what is buffered.
func (w *DescribeWriter) Flush() error { return w.tw.Flush() }

// Field writes "Key:\tvalue", with <none> for an empty value.
func (w *DescribeWriter) Field(level int, key, value string) {
	if value == "" {
		value = "<none>"
	}
	w.Line(level, "%s:\t%s", key, value)
}

// Optional writes the field only when there is a value.
func (w *DescribeWriter) Optional(level int, key, value string) {
	if value != "" {
		w.Line(level, "%s:\t%s", key, value)
	}
}

// MapField writes a map one pair per line, sorted, like kubectl's Labels.
// sep is part of the format (it may hold a tab); keys and values are data.
func (w *DescribeWriter) MapField(level int, key string, m map[string]string, sep string) {
	if len(m) == 0 {
		w.Field(level, key, "")
		return
	}
	sep = strings.ReplaceAll(sep, "%", "%%")
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == 0 {
			w.Line(level, "%s:\t%s"+sep+"%s", key, k, m[k])
			continue
		}
		w.Line(level, "\t%s"+sep+"%s", k, m[k])
	}
}

// Table writes a section: "Title:" then a header, a dashed rule and the
// rows, indented one level further, or "Title:\t<none>" when there are no
// rows. The table is laid out on its own: its lines have no tabs, so the
// fields around it do not change its columns.
func (w *DescribeWriter) Table(level int, title string, header []string, rows [][]string) {
	if len(rows) == 0 {
		w.Line(level, "%s:\t<none>", title)
		return
	}
	w.Line(level, "%s:", title)
	rule := make([]string, len(header))
	for i, h := range header {
		rule[i] = strings.Repeat("-", len(h))
	}
	t := NewTableWriter(w.tw, TableStyle{Gap: 2, Indent: 2 * (level + 1)})
	t.Header(header...)
	t.Row(rule...)
	for _, r := range rows {
		t.Row(r...)
	}
	_ = t.Render() // as in line, a write error is not reported here
}

// Header writes what every kind starts with.
func (w *DescribeWriter) Header(obj client.Object, kind string) {
	w.Field(0, "Name", obj.GetName())
	if obj.GetNamespace() != "" {
		w.Field(0, "Namespace", obj.GetNamespace())
	}
	w.Field(0, "Kind", kind)
	w.MapField(0, "Labels", obj.GetLabels(), "=")
	annotations := maps.Clone(obj.GetAnnotations())
	// As kubectl describe: the last applied object repeats the spec.
	delete(annotations, corev1.LastAppliedConfigAnnotation)
	w.MapField(0, "Annotations", annotations, ": ")
	w.Field(0, "Created", Timestamp(obj.GetCreationTimestamp()))
	if ts := obj.GetDeletionTimestamp(); ts != nil {
		w.Field(0, "Deleting Since", Timestamp(*ts))
	}
}

// Conditions writes the conditions table.
func (w *DescribeWriter) Conditions(conds []metav1.Condition) {
	rows := make([][]string, 0, len(conds))
	for _, c := range conds {
		rows = append(rows, []string{c.Type, string(c.Status), OrNone(c.Reason), Age(c.LastTransitionTime.Time), OneLine(c.Message)})
	}
	w.Table(0, "Conditions", []string{"Type", "Status", "Reason", "Age", "Message"}, rows)
}

// Events writes events oldest first with kubectl describe's columns.
func (w *DescribeWriter) Events(events []corev1.Event) {
	if len(events) == 0 {
		w.Line(0, "Events:\t<none>")
		return
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	rows := make([][]string, 0, len(events))
	for _, e := range events {
		first := e.FirstTimestamp.Time
		if first.IsZero() {
			first = e.EventTime.Time
		}
		interval := Age(first)
		switch {
		case e.Series != nil:
			interval = fmt.Sprintf("%s (x%d over %s)", Age(e.Series.LastObservedTime.Time), e.Series.Count, Age(first))
		case e.Count > 1:
			interval = fmt.Sprintf("%s (x%d over %s)", Age(e.LastTimestamp.Time), e.Count, Age(first))
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		rows = append(rows, []string{e.Type, e.Reason, interval, OrNone(from), OneLine(e.Message)})
	}
	w.Table(0, "Events", []string{"Type", "Reason", "Age", "From", "Message"}, rows)
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

// Timestamp is describe's time format.
func Timestamp(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC1123Z)
}

// Age is kubectl's AGE: 5s, 3m, 2d.
func Age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t))
}
