package cmdutil

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestDryRun(t *testing.T) {
	for _, tc := range []struct {
		value, suffix string
		valid         bool
	}{
		{value: "", suffix: "", valid: true},
		{value: "client", suffix: " (dry run)", valid: true},
		{value: "server", suffix: " (server dry run)", valid: true},
		{value: "Client", suffix: "", valid: false},
		{value: "unchanged", suffix: "", valid: false},
	} {
		err := ValidateDryRun(tc.value)
		var e *Error
		if valid := err == nil; valid != tc.valid || (!valid && (!errors.As(err, &e) || e.Code != ExitUsage)) {
			t.Errorf("ValidateDryRun(%q) = %v, want valid %v (or a usage error)", tc.value, err, tc.valid)
		}
		if got := DryRunSuffix(tc.value); got != tc.suffix {
			t.Errorf("DryRunSuffix(%q) = %q, want %q", tc.value, got, tc.suffix)
		}
	}
}

// TestDryRunFlag: every command's --dry-run reads the same: none by
// default and for =none, a bare --dry-run is client.
func TestDryRunFlag(t *testing.T) {
	for args, want := range map[string]string{
		"":                 "",
		"--dry-run=none":   "",
		"--dry-run":        "client",
		"--dry-run=client": "client",
		"--dry-run=server": "server",
		"--dry-run=maybe":  "maybe", // Validate refuses it
	} {
		var got string
		cmd := &cobra.Command{Use: "x", Run: func(*cobra.Command, []string) {}}
		AddDryRunFlag(cmd, &got, "Usage.")
		cmd.SetArgs(strings.Fields(args))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if got != want {
			t.Errorf("%q: dry run %q, want %q", args, got, want)
		}
		if f := cmd.Flags().Lookup("dry-run"); f.DefValue != "none" || f.NoOptDefVal != "client" {
			t.Errorf("default %q, bare %q; want none and client", f.DefValue, f.NoOptDefVal)
		}
	}
}
