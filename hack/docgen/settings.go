package docgen

import (
	"fmt"
	"strings"

	"github.com/kubectl-sched/kubectl-sched/api/settings"
)

// settingsPage is docs/reference/settings.md: settings.All as a table.
func settingsPage() string {
	var b strings.Builder
	b.WriteString(header("api/settings (settings.All)"))
	b.WriteString("# Operator settings\n\n")
	b.WriteString("Every cluster setting of the operator: `kubectl sched install` takes it as a flag and writes it into the ConfigMap `kubectl-sched-operator-config`, ")
	b.WriteString("which the operator reads as environment variables at start (its own flag of the same name wins, for `make run`). ")
	b.WriteString("[Settings](../admins/settings.md) says how they are set and changed.\n\n")
	b.WriteString("| install and operator flag | environment variable | default | what it does |\n|---|---|---|---|\n")
	for _, s := range settings.All {
		flag := "--" + s.Flag
		if s.Metavar != "" {
			flag += " " + s.Metavar
		}
		env := "`" + s.Env + "`"
		switch {
		case s.Seed != "" && s.SeedNegates:
			env += fmt.Sprintf(" (or the seed's `%s=true` for `false`)", s.Seed)
		case s.Seed != "":
			env += fmt.Sprintf(" (or the seed's `%s`)", s.Seed)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", flag, env, s.Default, s.Doc)
	}
	b.WriteString("\nThe seed's names are read as aliases when the operator's own variable is not set; ours win when both are. Install writes only ours.\n")
	return b.String()
}
