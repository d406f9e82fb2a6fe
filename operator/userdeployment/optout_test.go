package userdeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// An app created while its namespace was opted out loses its privileged
// pods when an admin removes the label: the service is scaled to zero with
// a restricted template, the app says why, and the other service runs on.
// Setting the label again brings the service back.
func TestOptOutRemovedStopsPrivilegedServices(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	testenv.SetOptOut(t, sim.Client, ns, true)
	tenant, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, "privileged-app-owner", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "userdeployments"})
	if err != nil {
		t.Fatal(err)
	}
	ud := MakeUserDeployment("tools", ns).
		Service("net", "netshoot:1", 80, schedv1.ExposureInternal).
		EditService("net", func(s *schedv1.ServiceSpec) {
			s.SecurityContext = &schedv1.SecurityContext{Privileged: ptr.To(true)}
		}).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
	// Admission learns of the label from its namespace informer.
	testenv.EventuallyWithin(t, testenv.Timeout, "the privileged app admitted in the opted-out namespace", func(ctx context.Context) error {
		err := tenant.Create(ctx, ud.DeepCopy())
		if err != nil && strings.Contains(err.Error(), "privileged containers are not allowed") {
			return err
		}
		if err != nil {
			t.Fatal(err)
		}
		return nil
	})
	waitUD(t, ns, "tools", "Running", phase(schedv1.UserDeploymentRunning))
	if sc := workload(t, ns, "tools", "net").Spec.Template.Spec.Containers[0].SecurityContext; !ptr.Deref(sc.Privileged, false) {
		t.Fatalf("opted out: the net service's container is not privileged: %+v", sc)
	}

	testenv.SetOptOut(t, sim.Client, ns, false)
	got := waitUD(t, ns, "tools", "Degraded", phase(schedv1.UserDeploymentDegraded))
	c := condition(got, schedv1.ConditionDegraded)
	if c.Reason != schedv1.ReasonPrivilegedNotAllowed {
		t.Errorf("Degraded reason %s, want %s", c.Reason, schedv1.ReasonPrivilegedNotAllowed)
	}
	for _, want := range []string{"service net", "spec.services[net].securityContext.privileged", schedv1.LabelAllowPrivilegedPods + "=true"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Degraded message %q does not say %q", c.Message, want)
		}
	}
	net := workload(t, ns, "tools", "net")
	if sc := net.Spec.Template.Spec.Containers[0].SecurityContext; ptr.Deref(net.Spec.Replicas, -1) != 0 || ptr.Deref(sc.Privileged, true) || ptr.Deref(sc.AllowPrivilegeEscalation, true) {
		t.Errorf("net: replicas %v, container %+v; want 0 replicas of a restricted template", net.Spec.Replicas, sc)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "no privileged pod left", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelUserDeployment: "tools", schedv1.LabelService: "net"}); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pod(s) of net left", len(pods.Items))
		}
		var sets appsv1.ReplicaSetList
		if err := sim.Client.List(ctx, &sets, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, rs := range sets.Items {
			if ptr.Deref(rs.Spec.Replicas, 0) > 0 && ptr.Deref(rs.Spec.Template.Spec.Containers[0].SecurityContext.Privileged, false) {
				return fmt.Errorf("ReplicaSet %s wants %d privileged pod(s)", rs.Name, *rs.Spec.Replicas)
			}
		}
		return nil
	})
	if s := got.Status.Services[1]; s.Name != "api" || s.DesiredReplicas != 1 {
		t.Errorf("api: %+v, want it left running", s)
	}

	testenv.SetOptOut(t, sim.Client, ns, true)
	waitUD(t, ns, "tools", "Running again", phase(schedv1.UserDeploymentRunning))
}

func workload(t *testing.T, ns, app, service string) *appsv1.Deployment {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names.ServiceObject(app, service)}, dep); err != nil {
		t.Fatal(err)
	}
	return dep
}
