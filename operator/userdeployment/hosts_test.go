package userdeployment_test

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	. "github.com/kubectl-sched/kubectl-sched/api/testing"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// tenantClient acts as user, who may only edit kubectl-sched objects in ns
// (kubectl-sched-edit, as the built-in edit role carries it).
func tenantClient(t *testing.T, ns, user string) client.Client {
	t.Helper()
	c, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, user, "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "userdeployments"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHostHeldByTheFirstNamespace: a tenant who names another namespace's
// host gets no route for it and a HostConflict naming the holder; once
// the holder lets go, the host passes to them.
func TestHostHeldByTheFirstNamespace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	victimNS, attackerNS := namespace(t), namespace(t)
	create(t, MakeUserDeployment("shop", victimNS).Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Obj())
	victim := waitUD(t, victimNS, "shop", "Running", phase(schedv1.UserDeploymentRunning))
	host := names.HostPrefix("shop", victimNS) + ".apps.test"
	if len(victim.Status.URLs) != 1 || !strings.Contains(victim.Status.URLs[0], host) {
		t.Fatalf("victim URLs %v, want %s", victim.Status.URLs, host)
	}

	mallory := tenantClient(t, attackerNS, "mallory")
	attack := MakeUserDeployment("grab", attackerNS).Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
		Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: host} }).Obj()
	if err := mallory.Create(ctx, attack); err != nil {
		t.Fatal(err)
	}
	got := waitUD(t, attackerNS, "grab", "Degraded by HostConflict", func(ud *schedv1.UserDeployment) bool {
		return ud.Status.Phase == schedv1.UserDeploymentDegraded && condition(ud, schedv1.ConditionDegraded).Reason == schedv1.ReasonHostConflict
	})
	if msg := condition(got, schedv1.ConditionDegraded).Message; !strings.Contains(msg, victimNS+"/shop") || !strings.Contains(msg, host) {
		t.Errorf("Degraded message %q does not name the host and its holder", msg)
	}
	if len(got.Status.URLs) != 0 {
		t.Errorf("the attacker's app reports URLs %v", got.Status.URLs)
	}
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: attackerNS, Name: "grab"}, &networkingv1.Ingress{}); !apierrors.IsNotFound(err) {
		t.Errorf("attacker's Ingress: err = %v, want not found", err)
	}
	ing := &networkingv1.Ingress{}
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: victimNS, Name: "shop"}, ing); err != nil || ing.Spec.Rules[0].Host != host {
		t.Errorf("victim's Ingress %v: %v", ing.Spec.Rules, err)
	}

	// The holder lets go: the host passes on.
	if err := sim.Client.Delete(ctx, victim); err != nil {
		t.Fatal(err)
	}
	waitUD(t, attackerNS, "grab", "Running with the host", func(ud *schedv1.UserDeployment) bool {
		return ud.Status.Phase == schedv1.UserDeploymentRunning && len(ud.Status.URLs) == 1 && strings.Contains(ud.Status.URLs[0], host)
	})
	eventually(t, "the new holder's Ingress", func(ctx context.Context) error {
		return sim.Client.Get(ctx, types.NamespacedName{Namespace: attackerNS, Name: "grab"}, &networkingv1.Ingress{})
	})
}
