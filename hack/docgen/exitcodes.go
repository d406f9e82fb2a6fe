package docgen

import (
	"fmt"
	"strings"

	plugincmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

// exitCodes is docs/reference/exit-codes.md: the plugin's ExitCodes as a table.
func exitCodes() string {
	var b strings.Builder
	b.WriteString(header("plugin/internal/cmdutil (ExitCodes)"))
	b.WriteString("# Exit codes\n\n")
	b.WriteString("Every `kubectl sched` command ends with one of these, so scripts can tell what happened. ")
	b.WriteString("An error is one line on stderr saying what was wrong, then what to do.\n\n")
	b.WriteString("| code | meaning |\n|---|---|\n")
	for _, c := range plugincmd.ExitCodes {
		fmt.Fprintf(&b, "| %d | %s |\n", c.Code, c.Meaning)
	}
	return b.String()
}
