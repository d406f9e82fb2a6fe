package describe

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// timePtr is Timestamp of an optional time.
func timePtr(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return printing.Timestamp(*t)
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
