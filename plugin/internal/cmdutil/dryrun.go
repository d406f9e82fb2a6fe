package cmdutil

import "github.com/spf13/cobra"

// AddDryRunFlag registers --dry-run into p, as kubectl's
// cmdutil.AddDryRunFlag does; usage says what client and server do for
// this command. Its default is p's value ("" for most commands, kubectl's
// "none" for those that take it), and a bare --dry-run means client.
func AddDryRunFlag(cmd *cobra.Command, p *string, usage string) {
	cmd.Flags().StringVar(p, "dry-run", *p, usage)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
}

// ValidateDryRun checks a --dry-run value once a command has read it:
// empty for none, "client" or "server".
func ValidateDryRun(v string) error {
	switch v {
	case "", "client", "server":
		return nil
	}
	return Usage("Use --dry-run=client or --dry-run=server.", "--dry-run must be client or server, got %q", v)
}

// DryRunSuffix is what follows an object's line in a dry run, as kubectl
// prints it.
func DryRunSuffix(v string) string {
	switch v {
	case "client":
		return " (dry run)"
	case "server":
		return " (server dry run)"
	}
	return ""
}
