package cmdutil

import "github.com/spf13/cobra"

// AddDryRunFlag registers --dry-run into p, as kubectl's
// cmdutil.AddDryRunFlag does; usage says what client and server do for
// this command. *p is "" for none (the default, and --dry-run=none, as
// kubectl takes it), "client" or "server"; a bare --dry-run means client,
// as kubectl's deprecated bare form did. Validate checks it with
// ValidateDryRun.
func AddDryRunFlag(cmd *cobra.Command, p *string, usage string) {
	*p = ""
	cmd.Flags().Var(dryRunValue{p}, "dry-run", usage+" A bare --dry-run means client.")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
}

// dryRunValue holds --dry-run, "none" read as "".
type dryRunValue struct{ p *string }

func (v dryRunValue) String() string {
	if v.p == nil || *v.p == "" {
		return "none"
	}
	return *v.p
}

func (v dryRunValue) Set(s string) error {
	if s == "none" {
		s = ""
	}
	*v.p = s
	return nil
}

func (v dryRunValue) Type() string { return "string" }

// ValidateDryRun checks a --dry-run value once a command has read it:
// empty for none, "client" or "server".
func ValidateDryRun(v string) error {
	switch v {
	case "", "client", "server":
		return nil
	}
	return Usage("Use --dry-run=client or --dry-run=server.", "--dry-run must be client, server or none, got %q", v)
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
