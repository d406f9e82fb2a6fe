package appedit

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// completeTimeout bounds completion's request: a shell must not hang on a
// cluster that does not answer.
const completeTimeout = 5 * time.Second

// Completion is where the service names go among a command's arguments.
type Completion struct {
	// MaxServices is how many service arguments follow the app (0: any
	// number).
	MaxServices int
	// Suffix follows each service name ("=" for SERVICE=IMAGE); the shell
	// then adds no space.
	Suffix string
	// StopAt: a word holding one of these characters is no service (an
	// env var's "=").
	StopAt string
}

// Complete completes the first argument with the apps in the namespace
// and the next ones with the services of the app named first. kubectl's
// __complete passes the connection flags, so -n and --context apply.
func Complete(o *kube.ClientOptions, c Completion) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return o.CompleteNames(udKind, 1)(nil, args, toComplete)
		}
		given := args[1:]
		if c.MaxServices > 0 && len(given) >= c.MaxServices {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if c.StopAt != "" && strings.ContainsAny(toComplete, c.StopAt) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range ServiceNames(o, args[0]) {
			taken := false
			for _, g := range given {
				taken = taken || g == s || strings.HasPrefix(g, s+c.Suffix) && c.Suffix != ""
			}
			if !taken && strings.HasPrefix(s+c.Suffix, toComplete) {
				out = append(out, s+c.Suffix)
			}
		}
		d := cobra.ShellCompDirectiveNoFileComp
		if c.Suffix != "" {
			d |= cobra.ShellCompDirectiveNoSpace
		}
		return out, d
	}
}

// ServiceNames are the services of app name, in the flags' namespace;
// none on any error: completion stays quiet.
func ServiceNames(o *kube.ClientOptions, name string) []string {
	c, err := o.NewClients(o.Flags)
	if err != nil {
		return nil
	}
	if c, err = c.WithTimeout(completeTimeout); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	ud := &schedv1.UserDeployment{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, ud); err != nil {
		return nil
	}
	names := make([]string, 0, len(ud.Spec.Services))
	for _, s := range ud.Spec.Services {
		names = append(names, s.Name)
	}
	return names
}
