package kube

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

// completeTimeout bounds completion's one request: a shell must not hang
// on a cluster that does not answer.
const completeTimeout = 5 * time.Second

// CompleteKindsAndNames completes the first argument with the kinds and
// the next ones with the names of that kind in the cluster. kubectl's
// __complete passes the connection flags, so -n and --context apply.
func (o *ClientOptions) CompleteKindsAndNames() cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			var out []cobra.Completion
			for _, k := range kinds.Kinds {
				if strings.HasPrefix(k.Singular, toComplete) {
					out = append(out, cobra.CompletionWithDesc(k.Singular, k.Kind+" ("+k.Short+")"))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		k, ok := kinds.Lookup(args[0])
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := o.ListNames(k)
		out := make([]cobra.Completion, 0, len(names))
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) && !slices.Contains(args[1:], n) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// CompleteNames completes arguments with the names of one kind, up to max
// of them (0: any number).
func (o *ClientOptions) CompleteNames(k kinds.Kind, max int) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if max > 0 && len(args) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, n := range o.ListNames(k) {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// ListNames lists the names of kind k in the flags' namespace with a
// metadata-only request, with clients from the getter; completion stays
// quiet on errors.
func (o *ClientOptions) ListNames(k kinds.Kind) []string {
	c, err := o.NewClients(o.Flags)
	if err != nil {
		return nil
	}
	if c, err = c.WithTimeout(completeTimeout); err != nil {
		return nil
	}
	res := c.Metadata.Resource(k.GVR())
	var list *metav1.PartialObjectMetadataList
	if k.Namespaced {
		list, err = res.Namespace(c.Namespace).List(context.Background(), metav1.ListOptions{})
	} else {
		list, err = res.List(context.Background(), metav1.ListOptions{})
	}
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(list.Items))
	for _, m := range list.Items {
		names = append(names, m.Name)
	}
	return names
}
