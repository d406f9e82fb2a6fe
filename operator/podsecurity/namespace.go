package podsecurity

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// AllowsPrivileged reports whether a cluster admin opted namespace ns out of
// the restricted default (LabelAllowPrivilegedPods=true). It reads the
// cache first and, when that says no, the API server: only specs that ask
// for privilege get here, and refusing one fails a task for good, so a
// cache that has not seen a new label yet must not decide.
func AllowsPrivileged(ctx context.Context, cache, live client.Reader, ns string) (bool, error) {
	for _, r := range []client.Reader{cache, live} {
		if r == nil {
			continue
		}
		n := &corev1.Namespace{}
		switch err := r.Get(ctx, client.ObjectKey{Name: ns}, n); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("read namespace %s: %w", ns, err)
		case optedOut(n):
			return true, nil
		}
	}
	return false, nil
}

func optedOut(o client.Object) bool {
	return o.GetLabels()[schedv1.LabelAllowPrivilegedPods] == "true"
}

// NotAllowed says why fields (from Violations) are refused in namespace ns.
func NotAllowed(ns string, fields []string) string {
	return fmt.Sprintf("%s: not allowed in namespace %s, which is not labelled %s=true (a cluster admin removed the label, or never set it)",
		strings.Join(fields, ", "), ns, schedv1.LabelAllowPrivilegedPods)
}

// OptOutChanged passes the Namespace updates that set or remove the opt-out.
var OptOutChanged = watch.Updated(func(old, cur *corev1.Namespace) bool { return optedOut(old) != optedOut(cur) })

// OnOptOutChange enqueues, for a Namespace whose opt-out changed (filter
// with OptOutChanged), its objects that ask for privilege: removing the
// label must take the privilege back from what runs, not only refuse what
// comes next.
func OnOptOutChange(c client.Reader, newList func() client.ObjectList, asksForPrivilege func(client.Object) bool) handler.EventHandler {
	return watch.EnqueueListed(c, newList, watch.InNamespace, asksForPrivilege)
}
