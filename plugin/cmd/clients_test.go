package cmd_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// Every command, completion and version included, builds its clients with
// the getter the root command is given: a command that built its own would
// escape a test's getter, and a fix to kube.New.
func TestCommandsTakeClientsFromTheRoot(t *testing.T) {
	const injected = "clients from the test's getter"
	// One invocation of each command that gets as far as its clients.
	runs := map[string][]string{
		"deploy":            {"deploy", "shop", "--template", "web-app"},
		"deploy --image":    {"deploy", "hello", "--image", "nginx:1.27"},
		"describe":          {"describe", "at", "hello"},
		"delete":            {"delete", "at", "hello"},
		"doctor":            {"doctor"},
		"get":               {"get", "at"},
		"history":           {"history", "shop"},
		"install":           {"install", "--pin-image=false"},
		"logs":              {"logs", "shop"},
		"placement explain": {"placement", "explain", "ud", "shop"},
		"restart":           {"restart", "shop"},
		"scale":             {"scale", "shop", "web", "--replicas", "3"},
		"rollback":          {"rollback", "shop"},
		"schedext set":      {"schedext", "set", "lavd", "--sched", "scx_lavd"},
		"schedext status":   {"schedext", "status"},
		"schedext unset":    {"schedext", "unset", "lavd"},
		"set env":           {"set", "env", "shop", "web", "LOG=debug"},
		"set image":         {"set", "image", "shop", "web=nginx:1.28"},
		"start":             {"start", "shop"},
		"stop":              {"stop", "shop"},
		"task cancel":       {"task", "cancel", "hello"},
		"task logs":         {"task", "logs", "hello"},
		"task run":          {"task", "run", "hello", "--image", "busybox"},
		"template list":     {"template", "list"},
		"template render":   {"template", "render", "web-app", "shop", "--set", "apiImage=api:1"},
		"template show":     {"template", "show", "web-app"},
		"tenant create":     {"tenant", "create", "team", "--tier", "free"},
		"tenant delete":     {"tenant", "delete", "team"},
		"tenant describe":   {"tenant", "describe", "team"},
		"tenant list":       {"tenant", "list"},
		"uninstall":         {"uninstall"},
		"version":           {"version"},
		"workflow approve":  {"workflow", "approve", "nightly", "deploy"},
		"workflow deny":     {"workflow", "deny", "nightly", "deploy"},
		"workflow resume":   {"workflow", "resume", "nightly"},
		"workflow retry":    {"workflow", "retry", "nightly"},
		"workflow run":      {"workflow", "run", "-f", "nightly.yaml"},
		"workflow schedule": {"workflow", "schedule", "nightly", "--cron", "@daily", "-f", "nightly.yaml"},
		"workflow trigger":  {"workflow", "trigger", "nightly"},
		"workflow stop":     {"workflow", "stop", "nightly"},
		"workflow suspend":  {"workflow", "suspend", "nightly"},
		"workflow watch":    {"workflow", "watch", "nightly"},
		"__complete get":    {"__complete", "get", "at", ""},
		"__complete stop":   {"__complete", "stop", ""},
		"__complete logs":   {"__complete", "task", "logs", ""},
		"__complete delete": {"__complete", "delete", "wf", ""},
		"__complete steps":  {"__complete", "placement", "explain", "wf", "nightly", ""},
		"__complete scale":  {"__complete", "scale", "shop", ""},
		"__complete set":    {"__complete", "set", "image", "shop", ""},
		"__complete env":    {"__complete", "set", "env", ""},
	}
	// The table names every runnable command but the groups, which print
	// their help.
	root := cmd.NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	var missing []string
	walk(root, func(c *cobra.Command) {
		path, sub := strings.CutPrefix(c.CommandPath(), root.DisplayName()+" ")
		if sub && c.Runnable() && path != "help" && !strings.HasPrefix(path, "completion") && runs[path] == nil &&
			!slices.Contains([]string{"placement", "schedext", "set", "template", "task", "tenant", "workflow"}, path) {
			missing = append(missing, path)
		}
	})
	if len(missing) > 0 {
		t.Fatalf("no invocation of %q here: add one", missing)
	}

	for name, args := range runs {
		t.Run(name, func(t *testing.T) {
			calls := 0
			getter := func(*genericclioptions.ConfigFlags) (*kube.Clients, error) {
				calls++
				return nil, errors.New(injected)
			}
			r := plugintest.RunWith(cmd.RootOptions{NewClients: getter}, "", args...)
			if calls == 0 {
				t.Errorf("%v did not ask the root's getter for clients (exit %d)\nstderr: %s", args, r.Code, r.Stderr)
			}
			// Completion stays quiet on errors; the rest say what failed.
			if args[0] != "__complete" && !strings.Contains(r.Stderr, injected) {
				t.Errorf("%v: stderr lacks the getter's error (exit %d):\n%s", args, r.Code, r.Stderr)
			}
		})
	}

	// --client asks for no clients at all.
	r := plugintest.RunWith(cmd.RootOptions{NewClients: func(*genericclioptions.ConfigFlags) (*kube.Clients, error) {
		t.Error("version --client asked for clients")
		return nil, errors.New(injected)
	}}, "", "version", "--client")
	if r.Code != 0 {
		t.Errorf("version --client: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}
