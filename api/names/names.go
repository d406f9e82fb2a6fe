// Package names derives the names of the objects the operator creates from
// the names users choose. Derived names are deterministic (a restart finds
// the same object instead of creating a second) and fit in 63 characters
// (a DNS label, and the limit for label values such as job-name).
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// MaxLength is the longest derived name: a DNS-1123 label.
const MaxLength = 63

// hashLen is how many hex characters of the hash replace a cut tail; 8
// gives about four billion values, plenty to keep cut names apart.
const hashLen = 8

// Join joins parts with "-" and, when the result is longer than MaxLength,
// cuts it and appends a hash of the whole name so distinct inputs stay
// distinct.
func Join(parts ...string) string {
	name := strings.Join(parts, "-")
	if len(name) <= MaxLength {
		return name
	}
	keep := MaxLength - hashLen - 1
	head := strings.TrimRight(name[:keep], "-.")
	return head + "-" + hashHex(name)
}

// Job is the Job that runs an AgentTask.
func Job(task string) string { return Join(task) }

// StepTask is the AgentTask that runs step index of a workflow.
func StepTask(workflow string, index int, step string) string {
	return Join(workflow, strconv.Itoa(index), step)
}

// FinallyStep is what names finally step index of a workflow in its
// task's name and step label: "finally0", "finally1", ... Step indexes are
// digits only, so it never reads as one.
func FinallyStep(index int) string { return "finally" + strconv.Itoa(index) }

// FinallyTask is the AgentTask that runs finally step index of a workflow.
func FinallyTask(workflow string, index int, step string) string {
	return Join(workflow, FinallyStep(index), step)
}

// ItemTask is the AgentTask that runs item item of forEach step index of
// a workflow: <workflow>-<index>-<step>-<item>.
func ItemTask(workflow string, index int, step string, item int) string {
	return Join(workflow, strconv.Itoa(index), step, strconv.Itoa(item))
}

// FinallyItemTask is the AgentTask that runs item item of forEach finally
// step index of a workflow.
func FinallyItemTask(workflow string, index int, step string, item int) string {
	return Join(workflow, FinallyStep(index), step, strconv.Itoa(item))
}

// ParseFinallyStep reads a step label written by FinallyStep: the index
// and true, or false for a main step's label.
func ParseFinallyStep(label string) (int, bool) {
	rest, ok := strings.CutPrefix(label, "finally")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return 0, false
	}
	return i, true
}

// WorkspaceClaim is the PersistentVolumeClaim of workspace ws of a
// workflow's run: <workflow>-ws-<workspace>.
func WorkspaceClaim(workflow, ws string) string { return Join(workflow, "ws", ws) }

// ServiceObject names the Deployment and Service of one service of an app.
func ServiceObject(app, service string) string { return Join(app, service) }

// ConfigMap is the ConfigMap holding an app's config.
func ConfigMap(app string) string { return Join(app, "config") }

// ExternalSecret names an app's ExternalSecret and the Secret it syncs.
func ExternalSecret(app, secret string) string { return Join(app, secret) }

// TLSSecret holds the certificate cert-manager issues for an app's host.
// The dot keeps it apart from the Secrets of external secret references,
// <app>-<reference>, which cannot contain one.
func TLSSecret(app string) string { return app + ".tls" }

// HostPrefix is what an app's default ingress host puts before the domain:
// <app>.<namespace>, as Knative does. Joining with "-" would let app a-b in
// namespace c and app a in namespace b-c share a host; a namespace has no
// dots, so the last label names it and no two apps' prefixes are equal.
func HostPrefix(app, namespace string) string { return Join(app) + "." + namespace }

// CronRun is the run a CronWorkflow starts for the schedule time at:
// <cron>-<unix seconds>, the same after a restart, so a run is never made
// twice.
func CronRun(cron string, at time.Time) string {
	return Join(cron, strconv.FormatInt(at.Unix(), 10))
}

// ManualCronRun is the run `kubectl sched workflow trigger` makes at:
// <cron>-manual-<unix seconds>, apart from every scheduled run.
func ManualCronRun(cron string, at time.Time) string {
	return Join(cron, "manual", strconv.FormatInt(at.Unix(), 10))
}

// DaemonSet runs a SchedExt's scheduler.
func DaemonSet(schedext string) string { return Join("scx", schedext) }

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLen]
}
