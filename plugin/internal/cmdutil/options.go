package cmdutil

import (
	"context"

	"github.com/spf13/cobra"
)

// Options is what every command's options struct does, in kubectl's order:
// Complete fills in what the flags and arguments imply (clients
// included), Validate checks them, Run does the work.
type Options interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// RunE is a command's RunE for o: Complete, Validate, then Run, stopping at
// the first error.
func RunE(o Options) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(cmd, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}

// ValidateJSONOrYAML checks -o of a command that prints one report, json
// or yaml, or text when empty.
func ValidateJSONOrYAML(output string) error {
	switch output {
	case "", "json", "yaml":
		return nil
	}
	return Usage("Use -o json or -o yaml.", "--output must be json or yaml, got %q", output)
}
