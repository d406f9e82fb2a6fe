package set

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/appedit"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

const envExamples = `  # Set LOG_LEVEL in app hello, which has one service
  kubectl sched set env hello LOG_LEVEL=debug

  # Set one variable and remove another in the api service of app shop
  kubectl sched set env shop api FEATURE_X=on OLD_FLAG-

  # See the app as it would be, without changing it
  kubectl sched set env shop api FEATURE_X=on --dry-run=client -o yaml`

// envName is the UserDeployment's pattern for an env var's name.
var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

type envOptions struct {
	appedit.Options
	Service string
	// set are NAME=VALUE in the order given, a later one of a name
	// winning; unset the names to remove.
	set   [][2]string
	unset []string
	args  []string
}

func newEnvCommand(c kube.ClientOptions) *cobra.Command {
	o := &envOptions{Options: appedit.Options{ClientOptions: c}}
	cmd := &cobra.Command{
		Use:   "env APP [SERVICE] NAME=VALUE... [NAME-]...",
		Short: "Set or remove environment variables of a service of an app",
		Long: `Set env changes spec.services[].env of the UserDeployment: NAME=VALUE sets a
variable, NAME- removes one. It applies with server-side apply as field
manager kubectl-sched and keeps the rest of the app; the operator then rolls
the service's pods, which read their environment only at start. SERVICE may
be left out when the app has one service.

Secret values do not belong here, where anyone who may read the app sees
them: give them to 'kubectl sched deploy --secret', which keeps them in a
Secret.`,
		Example:           envExamples,
		Args:              cmdutil.ArgsTaking(2, math.MaxInt, "APP [SERVICE] NAME=VALUE... [NAME-]..."),
		ValidArgsFunction: appedit.Complete(&o.ClientOptions, appedit.Completion{MaxServices: 1, StopAt: "="}),
		RunE:              cmdutil.RunE(o),
	}
	o.AddFlags(cmd)
	return cmd
}

func (o *envOptions) Complete(cmd *cobra.Command, args []string) error {
	o.args = args[1:]
	// A service name has neither '=' nor a trailing '-'.
	if a := o.args[0]; !strings.Contains(a, "=") && !strings.HasSuffix(a, "-") {
		o.Service, o.args = a, o.args[1:]
	}
	return o.Options.Complete(cmd, args)
}

func (o *envOptions) Validate() error {
	const hint = "Write NAME=VALUE to set a variable, NAME- to remove one."
	if len(o.args) == 0 {
		return cmdutil.Usage(hint, "no variable to set or remove after service %q", o.Service)
	}
	for _, a := range o.args {
		name, value, isSet := strings.Cut(a, "=")
		if !isSet {
			var ok bool
			if name, ok = strings.CutSuffix(a, "-"); !ok {
				return cmdutil.Usage(hint, "bad argument %q: want NAME=VALUE or NAME-", printing.Line(a))
			}
		}
		if !envName.MatchString(name) || len(name) > 128 {
			return cmdutil.Usage("A name has letters, digits, '_', '-' and '.', does not start with a digit, and at most 128 characters.",
				"bad variable name %q", printing.Line(name))
		}
		if isSet {
			o.set = slices.DeleteFunc(o.set, func(p [2]string) bool { return p[0] == name })
			o.set = append(o.set, [2]string{name, value})
		} else if !slices.Contains(o.unset, name) {
			o.unset = append(o.unset, name)
		}
	}
	for _, p := range o.set {
		if slices.Contains(o.unset, p[0]) {
			return cmdutil.Usage("Set it, or remove it.", "variable %s is both set and removed", p[0])
		}
	}
	return o.Options.Validate()
}

func (o *envOptions) Run(ctx context.Context) error {
	var svc string
	var notes []string
	ud, changed, err := o.Change(ctx, func(a *appedit.App) (map[string]appedit.Edit, error) {
		var err error
		if svc, err = a.Service(o.Service); err != nil {
			return nil, err
		}
		notes = nil
		return map[string]appedit.Edit{svc: func(live, applied map[string]any) error {
			for _, name := range o.unset {
				if !hasEnv(live, name) {
					why := "nothing to remove"
					if _, ok := a.UD.Spec.Config[name]; ok {
						why = "it comes from the app's config (spec.config), which set env does not change"
					}
					notes = append(notes, fmt.Sprintf("warning: service %s has no env %s: %s", svc, name, why))
					continue
				}
				if others := others(a.Managers(svc, kube.Field("env"), kube.Item("name", name))); !hasEnv(applied, name) || len(others) > 0 {
					by := "another field manager"
					if len(others) > 0 {
						by = strings.Join(others, ", ")
					}
					return cmdutil.Errorf(cmdutil.ExitError, "Remove it with what set it, or give it another value here (NAME=VALUE).",
						"env %s of service %s is also set by %s, so set env cannot remove it", name, svc, printing.Line(by))
				}
				removeEnv(live, name)
				removeEnv(applied, name)
			}
			for _, p := range o.set {
				setEnv(live, p[0], p[1])
				setEnv(applied, p[0], p[1])
			}
			return nil
		}}, nil
	})
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(o.ErrOut, n)
	}
	what := "env updated"
	if !changed {
		what = "env unchanged"
	}
	return o.Report(ctx, ud, fmt.Sprintf("%s service %s %s", appedit.Ref(o.Name), svc, what))
}

// others are the managers but kubectl sched's apply.
func others(managers []string) []string {
	return slices.DeleteFunc(managers, func(m string) bool { return m == kube.FieldManager })
}

func envList(svc map[string]any) []any {
	l, _ := svc["env"].([]any)
	return l
}

func hasEnv(svc map[string]any, name string) bool {
	return slices.ContainsFunc(envList(svc), func(v any) bool { return isEnv(v, name) })
}

func isEnv(v any, name string) bool {
	m, ok := v.(map[string]any)
	return ok && m["name"] == name
}

// removeEnv removes name, and the list when it is left empty: an apply
// without it lets the list go.
func removeEnv(svc map[string]any, name string) {
	l := slices.DeleteFunc(envList(svc), func(v any) bool { return isEnv(v, name) })
	if len(l) == 0 {
		delete(svc, "env")
		return
	}
	svc["env"] = l
}

// setEnv sets name to value in place, or adds it last.
func setEnv(svc map[string]any, name, value string) {
	item := map[string]any{"name": name}
	if value != "" {
		item["value"] = value
	}
	l := envList(svc)
	if i := slices.IndexFunc(l, func(v any) bool { return isEnv(v, name) }); i >= 0 {
		l[i] = item
	} else {
		l = append(l, item)
	}
	svc["env"] = l
}
