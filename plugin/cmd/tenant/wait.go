package tenant

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// pollEvery is how often create looks at the namespace's quotas while it
// waits.
const pollEvery = 500 * time.Millisecond

// waitState is what a tenant namespace still waits for: "" when it is
// usable, else what to print and what to say if it times out.
type waitState struct {
	what, hint string
}

// usable says what ns still waits for before creates in it are judged
// against its quotas: the operator must have made the tier's quota, and
// the cluster's quota controller must count everything each quota of the
// namespace limits (until then the API server refuses the uncounted kinds
// with "status unknown for quota").
func usable(ctx context.Context, c client.Reader, ns, tier, operatorNS string) (waitState, error) {
	var list corev1.ResourceQuotaList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return waitState{}, err
	}
	var tierQuota *corev1.ResourceQuota
	for i := range list.Items {
		if list.Items[i].Name == schedv1.TierObjectName {
			tierQuota = &list.Items[i]
		}
	}
	if tierQuota == nil || tierQuota.Labels[schedv1.LabelTier] != tier {
		return waitState{
			what: fmt.Sprintf("waiting for the operator to apply tier %s (ResourceQuota %s)", tier, schedv1.TierObjectName),
			hint: fmt.Sprintf("Is the operator running ('kubectl get pods -n %s')? A tier it cannot read is reported in the namespace's events ('kubectl get events -A --field-selector involvedObject.name=%s').", operatorNS, ns),
		}, nil
	}
	for _, q := range append([]corev1.ResourceQuota{*tierQuota}, list.Items...) {
		if !tiers.Synced(&q) {
			return waitState{
				what: fmt.Sprintf("waiting for the cluster's quota controller to count quota %s", q.Name),
				hint: "Is kube-controller-manager running with its resourcequota controller?",
			}, nil
		}
		if un := tiers.Uncounted(&q); len(un) > 0 {
			names := make([]string, len(un))
			for i, r := range un {
				names[i] = string(r)
			}
			return waitState{
				what: fmt.Sprintf("waiting for the cluster's quota controller to count %s in quota %s (it finds new kinds within 30s of their install; the operator asks it to recount)", strings.Join(names, ", "), q.Name),
				hint: fmt.Sprintf("Until then the API server refuses creates of those kinds in %s ('status unknown for quota'). Check that they are served ('kubectl api-resources') and see the operator's recount requests in 'kubectl get events -A --field-selector involvedObject.name=%s'.", ns, ns),
			}, nil
		}
	}
	return waitState{}, nil
}

// waitUsable waits until usable says ns is, printing to out each new
// thing it waits for, or fails after timeout with what it still waits for.
// Each look uses ctx, not the deadline: a request cut short by it would
// fail as an error rather than as the timeout it is.
func waitUsable(ctx context.Context, c client.Reader, out io.Writer, ns, tier, operatorNS string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last waitState
	for {
		st, err := usable(ctx, c, ns, tier, operatorNS)
		if err != nil {
			return cmdutil.API(err, "list", "resourcequotas in namespace "+ns)
		}
		if st.what == "" {
			fmt.Fprintf(out, "tenant %s ready: its quotas count everything they limit\n", ns)
			return nil
		}
		if st.what != last.what {
			fmt.Fprintf(out, "%s...\n", st.what)
		}
		last = st
		if !time.Now().Before(deadline) {
			return cmdutil.Errorf(cmdutil.ExitWatchTimeout,
				last.hint+fmt.Sprintf(" The namespace exists: run 'kubectl sched tenant create %s --tier %s' again to wait more.", ns, tier),
				"tenant %s is not usable yet after %s: still %s", ns, timeout, last.what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(pollEvery, time.Until(deadline))):
		}
	}
}
