package optionalapi_test

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-sched/kubectl-sched/api/operatorstatus"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/optionalapi"
)

// TestReporterWritesOnlyChanges: the status Lease is written when the
// report differs from what it holds, also by a new replica (a restart),
// and not otherwise.
func TestReporterWritesOnlyChanges(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t, env.Client)
	report := []operatorstatus.OptionalAPI{{Name: "Traefik", API: "traefik.io/v1alpha1 IngressRoute", State: operatorstatus.NotInstalled}}
	newReporter := func() *optionalapi.Reporter {
		return optionalapi.NewReporter(env.Client, env.Client, ns, "replica-a", nil, func() []operatorstatus.OptionalAPI { return report })
	}
	lease := func() *coordinationv1.Lease {
		t.Helper()
		l := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: operatorstatus.LeaseName}, l); err != nil {
			t.Fatal(err)
		}
		return l
	}

	p := newReporter()
	if got := p.Current(ctx); got != "" {
		t.Fatalf("current %q before any write", got)
	}
	written, err := p.Sync(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	first := lease()
	if got := first.Annotations[operatorstatus.AnnotationOptionalAPIs]; got != written || got != operatorstatus.Encode(report) {
		t.Errorf("annotation %q, want %q", got, operatorstatus.Encode(report))
	}
	if first.Spec.HolderIdentity == nil || *first.Spec.HolderIdentity != "replica-a" || first.Spec.RenewTime == nil {
		t.Errorf("holder %v, renew time %v", first.Spec.HolderIdentity, first.Spec.RenewTime)
	}

	// Nothing changed, for this replica or a new one: no write.
	if _, err := p.Sync(ctx, written); err != nil {
		t.Fatal(err)
	}
	restarted := newReporter()
	if _, err := restarted.Sync(ctx, restarted.Current(ctx)); err != nil {
		t.Fatal(err)
	}
	if rv := lease().ResourceVersion; rv != first.ResourceVersion {
		t.Errorf("the Lease was written again (resourceVersion %s -> %s) with nothing changed", first.ResourceVersion, rv)
	}

	// A change is written.
	report = []operatorstatus.OptionalAPI{{Name: "Traefik", API: "traefik.io/v1alpha1 IngressRoute", State: operatorstatus.InUse}}
	if _, err := restarted.Sync(ctx, written); err != nil {
		t.Fatal(err)
	}
	if got := lease().Annotations[operatorstatus.AnnotationOptionalAPIs]; got != operatorstatus.Encode(report) {
		t.Errorf("annotation %q after the change, want %q", got, operatorstatus.Encode(report))
	}
}
