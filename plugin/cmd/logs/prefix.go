package logs

import (
	"fmt"
	"io"
	"sync"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/podlogs"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// colors for prefixes on a terminal: one per pod, in the order pods are
// first seen, as stern does.
var colors = []string{"\033[36m", "\033[32m", "\033[35m", "\033[33m", "\033[34m", "\033[31m"}

const reset = "\033[0m"

// prefixWriter writes whole lines from many streams to one writer, each
// line behind its stream's "[prefix] ".
type prefixWriter struct {
	mu     sync.Mutex
	out    io.Writer
	color  bool
	colors map[string]string
}

func newPrefixWriter(out io.Writer, color bool) *prefixWriter {
	return &prefixWriter{out: out, color: color, colors: map[string]string{}}
}

// For returns the writer of one stream; Close it to flush a last line
// without a newline.
func (w *prefixWriter) For(prefix string) *podlogs.LineWriter {
	return podlogs.Lines(func(line string) { w.line(prefix, line) })
}

// line writes one line behind its prefix. The line is the container's
// (podlogs.Stream made it safe already; Text again costs nothing on
// clean text), the prefix names its pod: neither may carry a control.
func (w *prefixWriter) line(prefix, line string) {
	prefix, line = printing.Line(prefix), printing.Text(line)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.color {
		fmt.Fprintf(w.out, "[%s] %s\n", prefix, line)
		return
	}
	c, ok := w.colors[prefix]
	if !ok {
		c = colors[len(w.colors)%len(colors)]
		w.colors[prefix] = c
	}
	fmt.Fprintf(w.out, "%s[%s]%s %s\n", c, prefix, reset, line)
}
