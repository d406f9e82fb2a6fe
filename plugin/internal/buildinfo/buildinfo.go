// Package buildinfo is the plugin's own version, set when it is built, and
// how it compares with the operator's: `version`, `doctor` and `install`
// read it.
package buildinfo

import (
	"fmt"
	"runtime/debug"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Version is the plugin's version, set at build time with
// -ldflags "-X github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo.Version=v1.2.3".
var Version = ""

// ClientVersion is the build-time version, or the module version when built
// with go install, or "devel".
func ClientVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// SkewWarning says which side to upgrade when the plugin and the operator
// differ in major or minor version, "" when they agree or either is not a
// release (a dev build, a pseudo-version, a label such as "latest"): only
// releases promise anything about each other.
func SkewWarning(client, operator string) string {
	c, o := release(client), release(operator)
	if c == nil || o == nil || c.Major() == o.Major() && c.Minor() == o.Minor() {
		return ""
	}
	if c.LessThan(o) {
		return fmt.Sprintf("Warning: the plugin (%s) is older than the operator (%s): upgrade it with 'kubectl krew upgrade sched'.", client, operator)
	}
	return fmt.Sprintf("Warning: the operator (%s) is older than the plugin (%s): upgrade it with 'kubectl sched install'.", operator, client)
}

// MajorMinor is a release's "1.2", "" for anything that is not a release.
func MajorMinor(v string) string {
	r := release(v)
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%d.%d", r.Major(), r.Minor())
}

// release parses a release version (v1.2.3, 1.2.3-rc.1), nil for anything else.
func release(v string) *utilversion.Version {
	parsed, err := utilversion.ParseSemantic(v)
	// A pseudo-version (v0.0.0-20260102030405-abcdef012345) is a commit, not a release.
	if err != nil || parsed.Major() == 0 && parsed.Minor() == 0 && parsed.Patch() == 0 {
		return nil
	}
	return parsed
}
