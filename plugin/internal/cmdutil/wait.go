package cmdutil

import (
	"time"

	"github.com/spf13/cobra"
)

// defaultTimeoutUsage is --timeout's usage where it only bounds --wait.
const defaultTimeoutUsage = "With --wait, how long to wait before giving up (exit 12)."

// AddWaitFlags registers --wait into wait, waitUsage saying what it waits
// for, and --timeout into timeout, how long (timeoutUsage, or that it
// bounds --wait when ""), each with its current value as default. A nil
// wait registers only --timeout.
func AddWaitFlags(cmd *cobra.Command, wait *bool, waitUsage string, timeout *time.Duration, timeoutUsage string) {
	f := cmd.Flags()
	if wait != nil {
		f.BoolVar(wait, "wait", *wait, waitUsage)
	}
	if timeoutUsage == "" {
		timeoutUsage = defaultTimeoutUsage
	}
	f.DurationVar(timeout, "timeout", *timeout, timeoutUsage)
}

// ValidateTimeout checks --timeout is positive.
func ValidateTimeout(timeout time.Duration) error {
	if timeout <= 0 {
		return Usage("Give a positive duration, such as --timeout=2m.", "--timeout must be positive, got %v", timeout)
	}
	return nil
}

// ValidateWait checks that --wait does not follow a dry run, which changes
// nothing to wait for, and --timeout.
func ValidateWait(wait bool, timeout time.Duration, dryRun string) error {
	if wait && dryRun != "" {
		return Usage("Drop --wait, or --dry-run.", "--wait cannot follow a --dry-run: nothing changes")
	}
	return ValidateTimeout(timeout)
}
