package docgen

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	plugincmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

// commands is docs/reference/commands.md: every command of the plugin's
// cobra tree with its usage, help, examples and flags. The kubectl
// connection flags every command takes are listed once.
func commands() (string, error) {
	root := plugincmd.NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	root.InitDefaultCompletionCmd()
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)

	var b strings.Builder
	b.WriteString(header("plugin/cmd (the cobra tree of `kubectl sched`)"))
	b.WriteString("# Commands\n\n")
	b.WriteString("Every command of `kubectl sched`, as `--help` prints it, with its flags. ")
	b.WriteString("Every command also takes [kubectl's connection flags](#flags-every-command-takes); ")
	b.WriteString("[exit codes](exit-codes.md) are the same for all.\n\n")
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, c := range all[1:] {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", name(c), Slug(name(c)), cell(c.Short))
	}
	b.WriteString("\n## Flags every command takes\n\n")
	b.WriteString("The root command's flags, kubectl's own (`genericclioptions.ConfigFlags`): every command reads them.\n\n")
	flagTable(&b, root.PersistentFlags())
	for _, c := range all {
		command(&b, c)
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}

// name is a command's path as a user types it.
func name(c *cobra.Command) string {
	return strings.Replace(c.CommandPath(), "kubectl-sched", "kubectl sched", 1)
}

func command(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "## %s\n\n", name(c))
	fmt.Fprintf(b, "%s\n\n", paragraphs(c.Short))
	fmt.Fprintf(b, "```text\n%s\n```\n\n", strings.Replace(c.UseLine(), "kubectl-sched", "kubectl sched", 1))
	if len(c.Aliases) > 0 {
		fmt.Fprintf(b, "Aliases: `%s`.\n\n", strings.Join(c.Aliases, "`, `"))
	}
	if long := strings.TrimSpace(c.Long); long != "" && long != strings.TrimSpace(c.Short) {
		fmt.Fprintf(b, "```text\n%s\n```\n\n", long)
	}
	if c.Example != "" {
		fmt.Fprintf(b, "Examples:\n\n```sh\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
	}
	var subs []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			subs = append(subs, fmt.Sprintf("[`%s`](#%s)", sub.Name(), Slug(name(sub))))
		}
	}
	if len(subs) > 0 && c.HasParent() {
		fmt.Fprintf(b, "Subcommands: %s.\n\n", strings.Join(subs, ", "))
	}
	if c.HasParent() && c.NonInheritedFlags().HasAvailableFlags() {
		flagTable(b, c.NonInheritedFlags())
	}
}

func flagTable(b *strings.Builder, flags *pflag.FlagSet) {
	b.WriteString("| flag | default | what it does |\n|---|---|---|\n")
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		flag := "--" + f.Name
		if f.Shorthand != "" {
			flag = "-" + f.Shorthand + ", " + flag
		}
		if typ, _ := pflag.UnquoteUsage(f); typ != "" {
			flag += " " + typ
		}
		def := ""
		switch {
		case f.Value.Type() == "bool" && f.DefValue == "false":
		case f.DefValue == "" || f.DefValue == "[]":
		default:
			def = "`" + strings.ReplaceAll(homeless(f.DefValue), "|", `\|`) + "`"
		}
		_, usage := pflag.UnquoteUsage(f)
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", strings.ReplaceAll(flag, "|", `\|`), def, cell(usage))
	})
	b.WriteString("\n")
}

// homeless writes the user's home folder as ~, so the page is the same on
// every machine (kubectl's --cache-dir defaults under it).
func homeless(s string) string {
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		return strings.ReplaceAll(s, home, "~")
	}
	return s
}
