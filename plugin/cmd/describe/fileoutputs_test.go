package describe_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/describe"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// Describe shows a short file output as it is and a big or multi-line
// one by its size: a 1 MiB report is not printed.
func TestFileOutputs(t *testing.T) {
	got := describe.FileOutputs(map[string]string{
		"sha":    "abc123",
		"report": strings.Repeat("x", 100<<10),
		"items":  "a\nb\n",
		"color":  "\x1b[31mred",
	})
	want := map[string]string{
		"sha":    "abc123",
		"report": "(102400 bytes)",
		"items":  "(4 bytes)",
		"color":  printing.Line("\x1b[31mred"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if strings.Contains(got["color"], "\x1b") {
		t.Errorf("an escape sequence reaches the terminal: %q", got["color"])
	}
}
