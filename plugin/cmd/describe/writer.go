package describe

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

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// writer indents by level and aligns tab-separated cells, as kubectl
// describe's PrefixWriter does (same tabwriter settings).
type writer struct {
	tw *tabwriter.Writer
}

func newWriter(out io.Writer) *writer {
	return &writer{tw: tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)}
}

// line writes one line. The format is the plugin's; every argument comes
// from the cluster (annotations, messages, outputs, env values) and is made
// safe for the terminal and for the tabwriter: no control, tab or newline
// (printing.Safe).
func (w *writer) line(level int, format string, args ...any) {
	fmt.Fprintf(w.tw, strings.Repeat("  ", level)+format+"\n", printing.Safe(args...)...)
}

func (w *writer) Flush() error { return w.tw.Flush() }

// field writes "Key:\tvalue", with <none> for an empty value.
func (w *writer) field(level int, key, value string) {
	if value == "" {
		value = "<none>"
	}
	w.line(level, "%s:\t%s", key, value)
}

// optional writes the field only when there is a value.
func (w *writer) optional(level int, key, value string) {
	if value != "" {
		w.line(level, "%s:\t%s", key, value)
	}
}

// mapField writes a map one pair per line, sorted, like kubectl's Labels.
// sep is part of the format (it may hold a tab); keys and values are data.
func (w *writer) mapField(level int, key string, m map[string]string, sep string) {
	if len(m) == 0 {
		w.field(level, key, "")
		return
	}
	sep = strings.ReplaceAll(sep, "%", "%%")
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == 0 {
			w.line(level, "%s:\t%s"+sep+"%s", key, k, m[k])
			continue
		}
		w.line(level, "\t%s"+sep+"%s", k, m[k])
	}
}

// table writes a section: "Title:" then a header, a dashed rule and the
// rows, indented one level further, or "Title:\t<none>" when there are no
// rows. The table is laid out on its own: its lines have no tabs, so the
// fields around it do not change its columns.
func (w *writer) table(level int, title string, header []string, rows [][]string) {
	if len(rows) == 0 {
		w.line(level, "%s:\t<none>", title)
		return
	}
	w.line(level, "%s:", title)
	rule := make([]string, len(header))
	for i, h := range header {
		rule[i] = strings.Repeat("-", len(h))
	}
	t := printing.NewTableWriter(w.tw, printing.TableStyle{Gap: 2, Indent: 2 * (level + 1)})
	t.Header(header...)
	t.Row(rule...)
	for _, r := range rows {
		t.Row(r...)
	}
	_ = t.Render() // as in line, a write error is not reported here
}

// header writes what every kind starts with.
func (w *writer) header(obj client.Object, kind string) {
	w.field(0, "Name", obj.GetName())
	if obj.GetNamespace() != "" {
		w.field(0, "Namespace", obj.GetNamespace())
	}
	w.field(0, "Kind", kind)
	w.mapField(0, "Labels", obj.GetLabels(), "=")
	annotations := maps.Clone(obj.GetAnnotations())
	// As kubectl describe: the last applied object repeats the spec.
	delete(annotations, corev1.LastAppliedConfigAnnotation)
	w.mapField(0, "Annotations", annotations, ": ")
	w.field(0, "Created", timestamp(obj.GetCreationTimestamp()))
	if ts := obj.GetDeletionTimestamp(); ts != nil {
		w.field(0, "Deleting Since", timestamp(*ts))
	}
}

// conditions writes the conditions table.
func (w *writer) conditions(conds []metav1.Condition) {
	rows := make([][]string, 0, len(conds))
	for _, c := range conds {
		rows = append(rows, []string{c.Type, string(c.Status), printing.OrNone(c.Reason), age(c.LastTransitionTime.Time), printing.OneLine(c.Message)})
	}
	w.table(0, "Conditions", []string{"Type", "Status", "Reason", "Age", "Message"}, rows)
}

// eventRows writes events oldest first with kubectl describe's columns.
func (w *writer) eventRows(events []corev1.Event) {
	if len(events) == 0 {
		w.line(0, "Events:\t<none>")
		return
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	rows := make([][]string, 0, len(events))
	for _, e := range events {
		first := e.FirstTimestamp.Time
		if first.IsZero() {
			first = e.EventTime.Time
		}
		interval := age(first)
		switch {
		case e.Series != nil:
			interval = fmt.Sprintf("%s (x%d over %s)", age(e.Series.LastObservedTime.Time), e.Series.Count, age(first))
		case e.Count > 1:
			interval = fmt.Sprintf("%s (x%d over %s)", age(e.LastTimestamp.Time), e.Count, age(first))
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		rows = append(rows, []string{e.Type, e.Reason, interval, printing.OrNone(from), printing.OneLine(e.Message)})
	}
	w.table(0, "Events", []string{"Type", "Reason", "Age", "From", "Message"}, rows)
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

func timestamp(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC1123Z)
}

func timePtr(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return timestamp(*t)
}

// age is kubectl's AGE: 5s, 3m, 2d.
func age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t))
}

// elapsed is how long something took, or "" when it has not finished.
func elapsed(start, end *metav1.Time) string {
	if start == nil || end == nil {
		return ""
	}
	return printing.FormatDuration(end.Sub(start.Time))
}

// quoteArgs shows a command line with arguments that hold spaces quoted.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
			out[i] = fmt.Sprintf("%q", a)
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// sortedPairs renders a map as "k=v, k2=v2".
func sortedPairs(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}
