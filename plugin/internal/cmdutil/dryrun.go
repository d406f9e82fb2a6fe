package cmdutil

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
