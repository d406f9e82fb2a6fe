package cmdutil

import (
	"errors"
	"testing"
)

func TestDryRun(t *testing.T) {
	for _, tc := range []struct {
		value, suffix string
		valid         bool
	}{
		{value: "", suffix: "", valid: true},
		{value: "client", suffix: " (dry run)", valid: true},
		{value: "server", suffix: " (server dry run)", valid: true},
		{value: "none", suffix: "", valid: false}, // commands that accept none map it to "" first
		{value: "Client", suffix: "", valid: false},
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
