package userdeployment_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	plugincmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

func appLabel(name string) client.MatchingLabels {
	return client.MatchingLabels{schedv1.LabelUserDeployment: name}
}

// runningPods lists the app's pods that run and are not being deleted.
func runningPods(ctx context.Context, ns, name string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), appLabel(name)); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	return out, nil
}

// waitEvent waits for an event with reason about a UserDeployment; the
// recorder sends events in the background.
func waitEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	testenv.EventuallyWithin(t, testenv.Timeout, "a "+reason+" event", func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := sim.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "UserDeployment" && e.Regarding.Name == name {
				if e.Reason == reason {
					return nil
				}
				seen = append(seen, e.Reason)
			}
		}
		return fmt.Errorf("events %v", seen)
	})
}

func TestThreeServiceAppRuns(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db", Namespace: ns}, StringData: map[string]string{"PASSWORD": "s3cret"}})
	create(t, MakeUserDeployment("shop", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Replicas("web", 2).
		Service("api", "shop-api:1", 8080, schedv1.ExposureInternal).
		Service("worker", "shop-worker:1", 0, schedv1.ExposureNone).
		Config("MODE", "fast").SecretRef("db", "shop-db").Obj())

	ud := waitUD(t, ns, "shop", "Running", phase(schedv1.UserDeploymentRunning))
	if ud.Status.Ready != "3/3" {
		t.Errorf("ready %q, want 3/3", ud.Status.Ready)
	}
	if diff := cmp.Diff([]string{"http://" + names.HostPrefix("shop", ns) + ".apps.test/"}, ud.Status.URLs); diff != "" {
		t.Errorf("urls (-want +got):\n%s", diff)
	}
	wantServices := []schedv1.ServiceStatus{
		{Name: "web", ReadyReplicas: 2, DesiredReplicas: 2, Revision: 1},
		{Name: "api", ReadyReplicas: 1, DesiredReplicas: 1, Revision: 1},
		{Name: "worker", ReadyReplicas: 1, DesiredReplicas: 1, Revision: 1},
	}
	if diff := cmp.Diff(wantServices, ud.Status.Services); diff != "" {
		t.Errorf("services (-want +got):\n%s", diff)
	}
	if ud.Status.CurrentRevision != 1 || ud.Status.LastRunningRevision != 1 {
		t.Errorf("revisions: current %d, last running %d; want 1 and 1", ud.Status.CurrentRevision, ud.Status.LastRunningRevision)
	}
	for typ, want := range map[string]metav1.ConditionStatus{schedv1.ConditionReady: metav1.ConditionTrue, schedv1.ConditionProgressing: metav1.ConditionFalse, schedv1.ConditionDegraded: metav1.ConditionFalse} {
		if c := condition(ud, typ); c.Status != want || c.ObservedGeneration != ud.Generation {
			t.Errorf("%s condition %+v, want %s at generation %d", typ, c, want, ud.Generation)
		}
	}

	ctx := t.Context()
	var deps appsv1.DeploymentList
	if err := sim.Client.List(ctx, &deps, client.InNamespace(ns), appLabel("shop")); err != nil {
		t.Fatal(err)
	}
	var depNames []string
	for _, d := range deps.Items {
		depNames = append(depNames, d.Name)
		if !metav1.IsControlledBy(&d, ud) || d.Labels[schedv1.LabelManagedBy] != schedv1.ManagedByValue {
			t.Errorf("Deployment %s: owners %v labels %v", d.Name, d.OwnerReferences, d.Labels)
		}
		c := d.Spec.Template.Spec.Containers[0]
		wantFrom := []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-config"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-db"}}},
		}
		if diff := cmp.Diff(wantFrom, c.EnvFrom); diff != "" {
			t.Errorf("Deployment %s envFrom (-want +got):\n%s", d.Name, diff)
		}
	}
	slices.Sort(depNames)
	if diff := cmp.Diff([]string{"shop-api", "shop-web", "shop-worker"}, depNames); diff != "" {
		t.Errorf("Deployments (-want +got):\n%s", diff)
	}
	var svcs corev1.ServiceList
	if err := sim.Client.List(ctx, &svcs, client.InNamespace(ns), appLabel("shop")); err != nil {
		t.Fatal(err)
	}
	var svcNames []string
	for _, s := range svcs.Items {
		svcNames = append(svcNames, s.Name)
		if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.Selector[schedv1.LabelService] == "" || !metav1.IsControlledBy(&s, ud) {
			t.Errorf("Service %s: type %s selector %v owners %v", s.Name, s.Spec.Type, s.Spec.Selector, s.OwnerReferences)
		}
	}
	slices.Sort(svcNames)
	if diff := cmp.Diff([]string{"shop-api", "shop-web"}, svcNames); diff != "" {
		t.Errorf("Services, none for the worker (-want +got):\n%s", diff)
	}
	cm := &corev1.ConfigMap{}
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop-config"}, cm); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"MODE": "fast"}, cm.Data); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	for _, obj := range []client.Object{&networkingv1.Ingress{}, &networkingv1.NetworkPolicy{}} {
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, obj); err != nil {
			t.Errorf("%T: %v", obj, err)
		}
	}
	// The pods carry the managed-by label: the operator only caches those.
	pods, err := runningPods(ctx, ns, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 4 {
		t.Errorf("%d running pods, want 4", len(pods))
	}
	for _, p := range pods {
		if p.Labels[schedv1.LabelManagedBy] != schedv1.ManagedByValue {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}
	// One event for a new app, when it runs (the status told the rest).
	waitEvent(t, ns, "shop", schedv1.ReasonAvailable)
	// Secret values never reach the status.
	if strings.Contains(fmt.Sprintf("%+v", ud.Status), "s3cret") {
		t.Errorf("the status shows a secret value: %+v", ud.Status)
	}
}

func TestIngressAndNetworkPolicyContents(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	allowHosts(t, ns, "site.example.com")
	create(t, MakeUserDeployment("site", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
		Service("api", "site-api:1", 8080, schedv1.ExposurePublic).
		EditService("web", func(s *schedv1.ServiceSpec) { s.IngressPath = "/" }).
		Ingress("site.example.com").TLS("site-tls").
		Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress.ClassName = "nginx" }).Obj())
	ud := waitUD(t, ns, "site", "Running", phase(schedv1.UserDeploymentRunning))
	if diff := cmp.Diff([]string{"https://site.example.com/", "https://site.example.com/api"}, ud.Status.URLs); diff != "" {
		t.Errorf("urls (-want +got):\n%s", diff)
	}

	ing := &networkingv1.Ingress{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "site"}, ing); err != nil {
		t.Fatal(err)
	}
	prefix := ptr.To(networkingv1.PathTypePrefix)
	backend := func(name string, port int32) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
	}
	wantIngress := networkingv1.IngressSpec{
		IngressClassName: ptr.To("nginx"),
		TLS:              []networkingv1.IngressTLS{{Hosts: []string{"site.example.com"}, SecretName: "site-tls"}},
		Rules: []networkingv1.IngressRule{{Host: "site.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{
				{Path: "/", PathType: prefix, Backend: backend("site-web", 80)},
				{Path: "/api", PathType: prefix, Backend: backend("site-api", 8080)},
			},
		}}}},
	}
	if diff := cmp.Diff(wantIngress, ing.Spec); diff != "" {
		t.Errorf("Ingress (-want +got):\n%s", diff)
	}

	np := &networkingv1.NetworkPolicy{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "site"}, np); err != nil {
		t.Fatal(err)
	}
	self := &metav1.LabelSelector{MatchLabels: map[string]string{schedv1.LabelUserDeployment: "site"}}
	wantPolicy := networkingv1.NetworkPolicySpec{
		PodSelector: *self,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{PodSelector: self},
			{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: op.Options().Settings.IngressNamespace}}},
		}}},
	}
	if diff := cmp.Diff(wantPolicy, np.Spec); diff != "" {
		t.Errorf("NetworkPolicy (-want +got):\n%s", diff)
	}

	// allowFrom and egress, as the API server stores them.
	update(t, ns, "site", func(s *schedv1.UserDeploymentSpec) {
		s.AllowFrom = &schedv1.AllowFrom{
			Apps:         []string{"billing"},
			Tasks:        true,
			Namespaces:   []schedv1.NamespaceLabels{{MatchLabels: map[string]string{"team": "payments"}}},
			MetricsPorts: []int32{9090},
		}
		s.Egress = schedv1.EgressNamespace
	})
	tcp := corev1.ProtocolTCP
	udp := corev1.ProtocolUDP
	port := func(p *corev1.Protocol, n int) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt(n)
		return networkingv1.NetworkPolicyPort{Protocol: p, Port: &v}
	}
	dns := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(&udp, 53), port(&tcp, 53)}}
	wantPolicy = networkingv1.NetworkPolicySpec{
		PodSelector: *self,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: self},
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: op.Options().Settings.IngressNamespace}}},
				{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedv1.LabelUserDeployment, Operator: metav1.LabelSelectorOpIn, Values: []string{"billing"}}}}},
				{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedv1.LabelAgentTask, Operator: metav1.LabelSelectorOpExists}}}},
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "payments"}}},
			}},
			{
				From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: op.Options().Settings.MonitoringNamespace}}}},
				Ports: []networkingv1.NetworkPolicyPort{port(&tcp, 9090)},
			},
		},
		Egress: []networkingv1.NetworkPolicyEgressRule{dns, {To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
	}
	policyIs := func(want networkingv1.NetworkPolicySpec) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := sim.Client.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
				return err
			}
			if diff := cmp.Diff(want, np.Spec); diff != "" {
				return fmt.Errorf("NetworkPolicy (-want +got):\n%s", diff)
			}
			return nil
		}
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "the policy with allowFrom and egress", policyIs(wantPolicy))

	// Open with egress None: only egress is restricted.
	update(t, ns, "site", func(s *schedv1.UserDeploymentSpec) {
		s.NetworkIsolation, s.AllowFrom, s.Egress = schedv1.IsolationOpen, nil, schedv1.EgressNone
	})
	testenv.EventuallyWithin(t, testenv.Timeout, "the egress-only policy", policyIs(networkingv1.NetworkPolicySpec{
		PodSelector: *self,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress:      []networkingv1.NetworkPolicyEgressRule{dns},
	}))

	// Open with egress anywhere removes the policy.
	update(t, ns, "site", func(s *schedv1.UserDeploymentSpec) { s.Egress = schedv1.EgressInternet })
	gone(t, np)
}

func TestStopAndStart(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Replicas("web", 2).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).Config("A", "1").Obj())
	waitUD(t, ns, "app", "Running", phase(schedv1.UserDeploymentRunning))

	update(t, ns, "app", func(s *schedv1.UserDeploymentSpec) { s.State = schedv1.StateStopped })
	ud := waitUD(t, ns, "app", "Stopped with no pods left", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentStopped)(ud) && condition(ud, schedv1.ConditionProgressing).Status == metav1.ConditionFalse
	})
	if c := condition(ud, schedv1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != schedv1.ReasonStopped {
		t.Errorf("Ready condition %+v, want False/Stopped", c)
	}
	ctx := t.Context()
	for _, name := range []string{"app-web", "app-api"} {
		dep := &appsv1.Deployment{}
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, dep); err != nil {
			t.Fatal(err)
		}
		if *dep.Spec.Replicas != 0 {
			t.Errorf("Deployment %s has %d replicas while stopped", name, *dep.Spec.Replicas)
		}
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "no pods", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), appLabel("app")); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
	// Everything but the pods stays.
	for _, obj := range []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app-web"}}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "app"}}} {
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: obj.GetName()}, obj); err != nil {
			t.Errorf("%T %s while stopped: %v", obj, obj.GetName(), err)
		}
	}
	waitEvent(t, ns, "app", schedv1.ReasonStopped)

	update(t, ns, "app", func(s *schedv1.UserDeploymentSpec) { s.State = schedv1.StateRunning })
	ud = waitUD(t, ns, "app", "Running again", phase(schedv1.UserDeploymentRunning))
	if ud.Status.Ready != "2/2" {
		t.Errorf("ready %q, want 2/2", ud.Status.Ready)
	}
	pods, err := runningPods(ctx, ns, "app")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 3 {
		t.Errorf("%d running pods after the restart, want 3", len(pods))
	}
}

func TestServiceRemoved(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		Service("worker", "worker:1", 0, schedv1.ExposureNone).Obj())
	waitUD(t, ns, "app", "Running", phase(schedv1.UserDeploymentRunning))
	ctx := t.Context()
	webKey := types.NamespacedName{Namespace: ns, Name: "app-web"}
	dep, svc := &appsv1.Deployment{}, &corev1.Service{}
	for _, obj := range []client.Object{dep, svc} {
		if err := sim.Client.Get(ctx, webKey, obj); err != nil {
			t.Fatal(err)
		}
	}

	update(t, ns, "app", func(s *schedv1.UserDeploymentSpec) { s.Services = s.Services[:1] })
	gone(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-api"}})
	gone(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-api"}})
	gone(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-worker"}})
	ud := waitUD(t, ns, "app", "Running with one service", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && ud.Status.Ready == "1/1"
	})
	if len(ud.Status.Services) != 1 || ud.Status.Services[0].Name != "web" {
		t.Errorf("services %+v, want only web", ud.Status.Services)
	}
	// The remaining service's objects were not written to (the Deployment's
	// status may move; its spec and metadata may not).
	dep2, svc2 := &appsv1.Deployment{}, &corev1.Service{}
	for _, obj := range []client.Object{dep2, svc2} {
		if err := sim.Client.Get(ctx, webKey, obj); err != nil {
			t.Fatal(err)
		}
	}
	if svc2.ResourceVersion != svc.ResourceVersion {
		t.Errorf("Service app-web was written: resourceVersion %s -> %s", svc.ResourceVersion, svc2.ResourceVersion)
	}
	if dep2.Generation != dep.Generation || !cmp.Equal(dep.Labels, dep2.Labels) || !cmp.Equal(dep.Annotations, dep2.Annotations) {
		t.Errorf("Deployment app-web was written: generation %d -> %d", dep.Generation, dep2.Generation)
	}
	waitEvent(t, ns, "app", schedv1.ReasonDeleted)
}

func TestOutOfBandChangesRepaired(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj())
	waitUD(t, ns, "app", "Running", phase(schedv1.UserDeploymentRunning))
	ctx := t.Context()
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

	// remade deletes the object named name and waits for one of another UID.
	remade := func(t *testing.T, obj client.Object, what, name string, opts ...client.DeleteOption) {
		t.Helper()
		if err := sim.Client.Get(ctx, key(name), obj); err != nil {
			t.Fatal(err)
		}
		old := obj.GetUID()
		if err := sim.Client.Delete(ctx, obj, opts...); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyWithin(t, testenv.Timeout, "a new "+what+" "+name, func(ctx context.Context) error {
			if err := sim.Client.Get(ctx, key(name), obj); err != nil {
				return err
			}
			if obj.GetUID() == old {
				return fmt.Errorf("still the old one")
			}
			return nil
		})
	}
	t.Run("deleted Deployment", func(t *testing.T) {
		remade(t, &appsv1.Deployment{}, "Deployment", "app-api", client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
	t.Run("deleted Service", func(t *testing.T) {
		remade(t, &corev1.Service{}, "Service", "app-web")
	})
	t.Run("replicas edited", func(t *testing.T) {
		dep := &appsv1.Deployment{}
		if err := sim.Client.Get(ctx, key("app-web"), dep); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(dep.DeepCopy())
		dep.Spec.Replicas = ptr.To[int32](5)
		if err := sim.Client.Patch(ctx, dep, patch, client.FieldOwner("kubectl-scale")); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyWithin(t, testenv.Timeout, "replicas back to 1", func(ctx context.Context) error {
			if err := sim.Client.Get(ctx, key("app-web"), dep); err != nil {
				return err
			}
			if *dep.Spec.Replicas != 1 {
				return fmt.Errorf("replicas %d", *dep.Spec.Replicas)
			}
			return nil
		})
	})
	t.Run("policy widened", func(t *testing.T) {
		np := &networkingv1.NetworkPolicy{}
		if err := sim.Client.Get(ctx, key("app"), np); err != nil {
			t.Fatal(err)
		}
		want := np.Spec.DeepCopy()
		patch := client.MergeFrom(np.DeepCopy())
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}})
		if err := sim.Client.Patch(ctx, np, patch); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyWithin(t, testenv.Timeout, "the policy restored", func(ctx context.Context) error {
			if err := sim.Client.Get(ctx, key("app"), np); err != nil {
				return err
			}
			if diff := cmp.Diff(*want, np.Spec); diff != "" {
				return fmt.Errorf("(-want +got):\n%s", diff)
			}
			return nil
		})
	})
	t.Run("label removed", func(t *testing.T) {
		// Without the label the cache no longer sees the object; the
		// operator must find it with a direct read, not create a second.
		svc := &corev1.Service{}
		if err := sim.Client.Get(ctx, key("app-api"), svc); err != nil {
			t.Fatal(err)
		}
		uid := svc.UID
		patch := client.MergeFrom(svc.DeepCopy())
		delete(svc.Labels, schedv1.LabelManagedBy)
		if err := sim.Client.Patch(ctx, svc, patch); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyWithin(t, testenv.Timeout, "the label restored", func(ctx context.Context) error {
			if err := sim.Client.Get(ctx, key("app-api"), svc); err != nil {
				return err
			}
			if svc.Labels[schedv1.LabelManagedBy] != schedv1.ManagedByValue {
				return fmt.Errorf("labels %v", svc.Labels)
			}
			return nil
		})
		if svc.UID != uid {
			t.Errorf("the Service was replaced, not repaired")
		}
	})
	waitUD(t, ns, "app", "Running after the repairs", phase(schedv1.UserDeploymentRunning))
	waitEvent(t, ns, "app", schedv1.ReasonRepaired)
}

// TestPluginChangesAreNotDrift: what kubectl sched scale and set change
// goes through the app's spec, so the operator rolls the Deployment to it
// and calls none of it a repair; an out-of-band edit of the Deployment
// afterwards goes back to the scaled app, not to what deploy first said.
func TestPluginChangesAreNotDrift(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	sched := func(args ...string) {
		t.Helper()
		args = append(args, "-n", ns, "--kubeconfig", sim.Kubeconfig)
		var out bytes.Buffer
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
		root := plugincmd.NewRootCommand(streams)
		root.SetArgs(args)
		if code := plugincmd.Execute(root, streams); code != 0 {
			t.Fatalf("kubectl sched %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
		}
	}
	sched("deploy", "hello", "--image", "nginx:1.27", "--internal", "--wait", "--timeout", "1m")
	sched("scale", "hello", "--replicas", "3")
	sched("set", "image", "hello", "web=nginx:1.28")
	sched("set", "env", "hello", "LOG=debug", "--wait", "--timeout", "1m")

	ctx := t.Context()
	key := types.NamespacedName{Namespace: ns, Name: "hello-web"}
	dep := &appsv1.Deployment{}
	if err := sim.Client.Get(ctx, key, dep); err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if *dep.Spec.Replicas != 3 || c.Image != "nginx:1.28" || len(c.Env) != 1 || c.Env[0].Value != "debug" {
		t.Fatalf("Deployment: replicas %d, image %s, env %v", *dep.Spec.Replicas, c.Image, c.Env)
	}
	var events eventsv1.EventList
	if err := sim.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == schedv1.ReasonRepaired {
			t.Errorf("a change of the app was repaired as drift: %s", e.Note)
		}
	}

	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Replicas = ptr.To[int32](5)
	if err := sim.Client.Patch(ctx, dep, patch, client.FieldOwner("kubectl-scale")); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "replicas back to the app's 3", func(ctx context.Context) error {
		if err := sim.Client.Get(ctx, key, dep); err != nil {
			return err
		}
		if *dep.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *dep.Spec.Replicas)
		}
		return nil
	})
	waitEvent(t, ns, "hello", schedv1.ReasonRepaired)
}

func TestImagePullFailureReported(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
		Service("api", "registry.example/api:missing", 8080, schedv1.ExposureInternal).
		ServicePodAnnotation("api", cluster.AnnotationImagePullError, "ErrImagePull").Obj())
	// Degraded may be reported before the healthy service is ready.
	ud := waitUD(t, ns, "app", "Degraded with web ready", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentDegraded)(ud) && ud.Status.Ready == "1/2"
	})
	for _, typ := range []string{schedv1.ConditionReady, schedv1.ConditionDegraded} {
		c := condition(ud, typ)
		if c.Reason != schedv1.ReasonImagePull || !strings.Contains(c.Message, "cannot pull image registry.example/api:missing: ErrImagePull") {
			t.Errorf("%s condition %+v, want the image pull failure", typ, c)
		}
	}
	if ud.Status.Ready != "1/2" || !strings.Contains(ud.Status.Services[1].Message, "ErrImagePull") {
		t.Errorf("ready %s services %+v", ud.Status.Ready, ud.Status.Services)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "a Warning event with the cause", func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := sim.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == "app" && e.Type == corev1.EventTypeWarning && e.Reason == schedv1.ReasonImagePull {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})

	// A pull that works again brings the app back.
	update(t, ns, "app", func(s *schedv1.UserDeploymentSpec) { s.Services[1].PodMetadata = nil })
	waitUD(t, ns, "app", "Running after the fix", phase(schedv1.UserDeploymentRunning))
}

func TestCrashLoopReported(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		ServicePodAnnotation("api", cluster.AnnotationCrashExitCode, "2").
		ServicePodAnnotation("api", cluster.AnnotationTerminationMessage, "config key DB_URL is missing").Obj())
	ud := waitUD(t, ns, "app", "Degraded", phase(schedv1.UserDeploymentDegraded))
	c := condition(ud, schedv1.ConditionDegraded)
	for _, want := range []string{"keeps crashing (3 restarts)", "last exit code 2", "config key DB_URL is missing"} {
		if c.Reason != schedv1.ReasonCrashLoop || !strings.Contains(c.Message, want) {
			t.Errorf("Degraded condition %+v, want %s with %q", c, schedv1.ReasonCrashLoop, want)
		}
	}
	if ud.Status.Ready != "0/1" {
		t.Errorf("ready %s, want 0/1", ud.Status.Ready)
	}
	if msg := ud.Status.Services[0].Message; !strings.Contains(msg, "last exit code 2: config key DB_URL is missing") {
		t.Errorf("service message %q, want the termination message", msg)
	}
	// A container that writes no termination message leaves its log's end
	// there instead (the real node's tests see one).
	dep := &appsv1.Deployment{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "app-api"}, dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].TerminationMessagePolicy; got != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("terminationMessagePolicy %q, want %q", got, corev1.TerminationMessageFallbackToLogsOnError)
	}
}

// TestMissingSecretReported: the app references a Secret that does not
// exist; the simulated kubelet answers as a real one does (the annotation),
// and the app says which Secret, without the operator reading any.
func TestMissingSecretReported(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		SecretRef("db", "app-db").
		ServicePodAnnotation("api", cluster.AnnotationConfigError, `secret "app-db" not found`).Obj())
	ud := waitUD(t, ns, "app", "Degraded", phase(schedv1.UserDeploymentDegraded))
	c := condition(ud, schedv1.ConditionReady)
	if c.Reason != schedv1.ReasonMissingRef || !strings.Contains(c.Message, `secret "app-db" not found`) {
		t.Errorf("Ready condition %+v, want %s naming the Secret", c, schedv1.ReasonMissingRef)
	}
}

func TestPlacementChoosesTheNodes(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cases := map[string]struct {
		placement schedv1.Placement
		node      string
	}{
		"memory":       {schedv1.Placement{WorkloadType: schedv1.WorkloadMemory, NodePools: []string{"highmem"}}, "sim-highmem-a"},
		"spot":         {schedv1.Placement{Spot: schedv1.SpotRequired}, "sim-spot-b"},
		"gpu":          {schedv1.Placement{WorkloadType: schedv1.WorkloadGPU}, "sim-gpu-c"},
		"general-pool": {schedv1.Placement{NodePools: []string{"general"}, MultiZone: true}, "sim-general-"},
	}
	for name, tc := range cases {
		create(t, MakeUserDeployment(name, ns).Service("job", "worker:1", 0, schedv1.ExposureNone).Placement(tc.placement).Obj())
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			waitUD(t, ns, name, "Running", phase(schedv1.UserDeploymentRunning))
			pods, err := runningPods(t.Context(), ns, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(pods) != 1 || !strings.HasPrefix(pods[0].Spec.NodeName, tc.node) {
				var nodes []string
				for _, p := range pods {
					nodes = append(nodes, p.Spec.NodeName)
				}
				t.Errorf("pods on %v, want one on %s*", nodes, tc.node)
			}
		})
	}
}

func TestDeletionCleansUp(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ud := MakeUserDeployment("app", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Replicas("web", 2).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).Config("A", "1").Obj()
	create(t, ud)
	waitUD(t, ns, "app", "Running", phase(schedv1.UserDeploymentRunning))
	if err := sim.Client.Delete(t.Context(), ud); err != nil {
		t.Fatal(err)
	}
	gone(t, ud)
	lists := map[string]client.ObjectList{
		"Deployments": &appsv1.DeploymentList{}, "ReplicaSets": &appsv1.ReplicaSetList{}, "Pods": &corev1.PodList{},
		"Services": &corev1.ServiceList{}, "ConfigMaps": &corev1.ConfigMapList{},
		"Ingresses": &networkingv1.IngressList{}, "NetworkPolicies": &networkingv1.NetworkPolicyList{},
	}
	for kind, list := range lists {
		// The garbage collector notices a kind installed after it started
		// (the CRDs) only at its next discovery sync, every 30 seconds.
		testenv.EventuallyWithin(t, gcTimeout, "no "+kind, func(ctx context.Context) error {
			if err := sim.Client.List(ctx, list, client.InNamespace(ns), appLabel("app")); err != nil {
				return err
			}
			if n := meta.LenList(list); n > 0 {
				return fmt.Errorf("%d left", n)
			}
			return nil
		})
	}
}

func TestExternalSecretsUnavailableHoldsTheService(t *testing.T) {
	t.Parallel()
	if op.Options().Settings.ClusterSecretStore != "" {
		t.Fatalf("the shared operator has a ClusterSecretStore (%q); this test needs none", op.Options().Settings.ClusterSecretStore)
	}
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		ExternalSecretRef("db", "prod/db", "api").Obj())
	ud := waitUD(t, ns, "app", "Degraded with web running", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentDegraded)(ud) && ud.Status.Ready == "1/2"
	})
	c := condition(ud, schedv1.ConditionDegraded)
	if c.Reason != schedv1.ReasonExternalSecretsUnavailable || !strings.Contains(c.Message, "--cluster-secret-store") {
		t.Errorf("Degraded condition %+v, want ExternalSecretsUnavailable naming the missing store", c)
	}
	dep := &appsv1.Deployment{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "app-api"}, dep); err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 0 {
		t.Errorf("api runs %d replicas without its secret, want 0", *dep.Spec.Replicas)
	}
	var es unstructured.UnstructuredList
	es.SetAPIVersion("external-secrets.io/v1")
	es.SetKind("ExternalSecretList")
	if err := sim.Client.List(t.Context(), &es, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(es.Items) != 0 {
		t.Errorf("%d ExternalSecrets without a store", len(es.Items))
	}
}

func TestForeignObjectIsNotTakenOver(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "clash-api", Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 9999}}},
	}
	create(t, foreign)
	create(t, MakeUserDeployment("clash", ns).Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj())
	ud := waitUD(t, ns, "clash", "Degraded", phase(schedv1.UserDeploymentDegraded))
	c := condition(ud, schedv1.ConditionDegraded)
	if c.Reason != schedv1.ReasonCreateFailed || !strings.Contains(c.Message, "Service clash-api already exists and is not controlled by this UserDeployment") {
		t.Errorf("Degraded condition %+v", c)
	}
	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Fatal(err)
	}
	if len(foreign.OwnerReferences) > 0 || foreign.Spec.Ports[0].Port != 9999 {
		t.Errorf("the foreign Service was changed: owners %v ports %v", foreign.OwnerReferences, foreign.Spec.Ports)
	}
}

// TestOptionalAPIs runs the operator with a ClusterSecretStore and Traefik
// as the ingress provider, then back without them. It restarts the shared
// operator, so it does not run in parallel.
func TestOptionalAPIs(t *testing.T) {
	ns := namespace(t)
	restartOperator(t, func(o *app.Options) {
		o.Settings.ClusterSecretStore = "vault"
		o.Settings.IngressProvider = "traefik"
	})
	create(t, MakeUserDeployment("shop", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).TLS("shop-tls").
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Secrets = []schedv1.SecretReference{{Name: "db", External: &schedv1.ExternalSecretSource{Key: ns + "/db", Property: "password"}, MountPath: "/etc/db"}}
		}).Obj())
	ud := waitUD(t, ns, "shop", "Running", phase(schedv1.UserDeploymentRunning))
	host := names.HostPrefix("shop", ns) + ".apps.test"
	if diff := cmp.Diff([]string{"https://" + host + "/"}, ud.Status.URLs); diff != "" {
		t.Errorf("urls (-want +got):\n%s", diff)
	}

	ctx := t.Context()
	get := func(apiVersion, kind, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return u, sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	}
	es, err := get("external-secrets.io/v1", "ExternalSecret", "shop-db")
	if err != nil {
		t.Fatal(err)
	}
	wantES := map[string]any{
		"secretStoreRef": map[string]any{"kind": "ClusterSecretStore", "name": "vault"},
		"target":         map[string]any{"name": "shop-db", "creationPolicy": "Owner", "template": map[string]any{"type": "Opaque"}},
		"data":           []any{map[string]any{"secretKey": "password", "remoteRef": map[string]any{"key": ns + "/db", "property": "password"}}},
	}
	if diff := cmp.Diff(wantES, es.Object["spec"]); diff != "" {
		t.Errorf("ExternalSecret (-want +got):\n%s", diff)
	}

	// A tenant of another namespace asking the shared store for this
	// namespace's key gets no ExternalSecret and is told which keys are theirs.
	otherNS := namespace(t)
	mallory := tenantClient(t, otherNS, "mallory")
	if err := mallory.Create(ctx, MakeUserDeployment("steal", otherNS).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		ExternalSecretRef("db", ns+"/db", "api").Obj()); err != nil {
		t.Fatal(err)
	}
	stolen := waitUD(t, otherNS, "steal", "Degraded", phase(schedv1.UserDeploymentDegraded))
	if c := condition(stolen, schedv1.ConditionDegraded); c.Reason != schedv1.ReasonInvalidSpec || !strings.Contains(c.Message, `must start with "`+otherNS+`/"`) {
		t.Errorf("Degraded %+v, want InvalidSpec naming the allowed prefix", c)
	}
	esList := &unstructured.UnstructuredList{}
	esList.SetAPIVersion("external-secrets.io/v1")
	esList.SetKind("ExternalSecretList")
	if err := sim.Client.List(ctx, esList, client.InNamespace(otherNS)); err != nil || len(esList.Items) != 0 {
		t.Errorf("ExternalSecrets for another tenant's key: %d (err %v), want none", len(esList.Items), err)
	}
	if !metav1.IsControlledBy(es, ud) {
		t.Errorf("ExternalSecret owners %v", es.GetOwnerReferences())
	}
	route, err := get("traefik.io/v1alpha1", "IngressRoute", "shop")
	if err != nil {
		t.Fatal(err)
	}
	wantRoute := map[string]any{
		"entryPoints": []any{"websecure"},
		"tls":         map[string]any{"secretName": "shop-tls"},
		"routes": []any{map[string]any{
			"kind": "Rule", "match": "Host(`" + host + "`) && PathPrefix(`/`)",
			"services": []any{map[string]any{"name": "shop-web", "port": int64(80)}},
		}},
	}
	if diff := cmp.Diff(wantRoute, route.Object["spec"]); diff != "" {
		t.Errorf("IngressRoute (-want +got):\n%s", diff)
	}
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, &networkingv1.Ingress{}); !apierrors.IsNotFound(err) {
		t.Errorf("an Ingress beside the IngressRoute: %v", err)
	}
	dep := &appsv1.Deployment{}
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop-web"}, dep); err != nil {
		t.Fatal(err)
	}
	if v := dep.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != "shop-db" {
		t.Errorf("volumes %+v, want the synced Secret shop-db", v)
	}

	// An out-of-band edit of an optional kind is repaired too.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"target":{"name":"stolen"}}}`))
	if err := sim.Client.Patch(ctx, es, patch); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "the ExternalSecret restored", func(context.Context) error {
		es, err := get("external-secrets.io/v1", "ExternalSecret", "shop-db")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(wantES, es.Object["spec"]); diff != "" {
			return fmt.Errorf("(-want +got):\n%s", diff)
		}
		return nil
	})

	// Back to the defaults: an Ingress replaces the route, and without a
	// store the ExternalSecret goes and the service is held.
	restartOperator(t, nil)
	testenv.EventuallyWithin(t, testenv.Timeout, "an Ingress instead of the IngressRoute", func(ctx context.Context) error {
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, &networkingv1.Ingress{}); err != nil {
			return err
		}
		if _, err := get("traefik.io/v1alpha1", "IngressRoute", "shop"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("IngressRoute: %v", err)
		}
		if _, err := get("external-secrets.io/v1", "ExternalSecret", "shop-db"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ExternalSecret: %v", err)
		}
		return nil
	})
	ud = waitUD(t, ns, "shop", "Degraded", phase(schedv1.UserDeploymentDegraded))
	if c := condition(ud, schedv1.ConditionDegraded); c.Reason != schedv1.ReasonExternalSecretsUnavailable {
		t.Errorf("Degraded condition %+v", c)
	}
}

// TestNoWritesWhenNothingChanged reconciles a running app again and again
// (an annotation on the app triggers reconciles) and checks that the
// operator sent no write and that no object the app owns changed. It runs
// alone so the reconciles and writes are its own.
func TestNoWritesWhenNothingChanged(t *testing.T) {
	ns := namespace(t)
	create(t, MakeUserDeployment("quiet", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Replicas("web", 2).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		Config("A", "1").SecretRef("db", "quiet-db").
		Placement(schedv1.Placement{NodePools: []string{"general"}, MultiZone: true}).Obj())
	waitUD(t, ns, "quiet", "Running", phase(schedv1.UserDeploymentRunning))
	ctx := t.Context()
	versions := func() map[string]string {
		out := map[string]string{}
		ud := &schedv1.UserDeployment{}
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "quiet"}, ud); err != nil {
			t.Fatal(err)
		}
		out["UserDeployment"] = ud.ResourceVersion
		for kind, list := range map[string]client.ObjectList{
			"Deployment": &appsv1.DeploymentList{}, "Service": &corev1.ServiceList{}, "ConfigMap": &corev1.ConfigMapList{},
			"Ingress": &networkingv1.IngressList{}, "NetworkPolicy": &networkingv1.NetworkPolicyList{},
			"ControllerRevision": &appsv1.ControllerRevisionList{},
		} {
			if err := sim.Client.List(ctx, list, client.InNamespace(ns), appLabel("quiet")); err != nil {
				t.Fatal(err)
			}
			if err := meta.EachListItem(list, func(o runtime.Object) error {
				obj := o.(client.Object)
				out[kind+" "+obj.GetName()] = obj.GetResourceVersion()
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	// The deployment controller writes the Deployments' status once more
	// after the pods are ready; wait for that last write.
	testenv.EventuallyWithin(t, testenv.Timeout, "the rollouts to be complete", func(ctx context.Context) error {
		var deps appsv1.DeploymentList
		if err := sim.Client.List(ctx, &deps, client.InNamespace(ns), appLabel("quiet")); err != nil {
			return err
		}
		for _, d := range deps.Items {
			done := false
			for _, c := range d.Status.Conditions {
				done = done || c.Type == appsv1.DeploymentProgressing && c.Reason == "NewReplicaSetAvailable"
			}
			if !done {
				return fmt.Errorf("Deployment %s: %+v", d.Name, d.Status.Conditions)
			}
		}
		return nil
	})
	// And for the operator to have seen that: no reconcile for a second.
	last := -1
	testenv.EventuallyWithin(t, testenv.Timeout, "the operator to settle", func(context.Context) error {
		n := reconciles(t)
		defer func() { last = n }()
		if n != last {
			time.Sleep(time.Second)
			return fmt.Errorf("%d reconciles so far", n)
		}
		return nil
	})
	before := versions()
	if len(before) != 9 {
		t.Fatalf("found %d objects, want the app, the 7 objects it owns and its revision: %v", len(before), before)
	}

	start, written := reconciles(t), writeCount()
	ud := &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quiet"}}
	for i := range 3 {
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{"poke":"%d"}}}`, i)))
		if err := sim.Client.Patch(ctx, ud, patch); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "the operator to reconcile", func(context.Context) error {
		if n := reconciles(t) - start; n < 3 {
			return fmt.Errorf("%d reconciles", n)
		}
		return nil
	})
	// A write that changes nothing (an apply of the same fields) leaves the
	// resourceVersion alone, so the requests themselves are counted too:
	// those in this app's namespace, as tests running beside this one
	// (TestOptionalAPIs) have the operator write in theirs meanwhile.
	var w []string
	for _, r := range writesSince(written) {
		if strings.Contains(r, "/namespaces/"+ns+"/") {
			w = append(w, r)
		}
	}
	if len(w) > 0 {
		t.Errorf("the operator wrote while nothing changed:\n%s", strings.Join(w, "\n"))
	}
	after := versions()
	delete(before, "UserDeployment") // poked by the test; its writes are counted above
	delete(after, "UserDeployment")
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("objects were written while nothing changed (resourceVersions -before +after):\n%s", diff)
	}
}

// TestPriority: a mapped priority gives the pods its PriorityClass; an
// unmapped one runs the app at the default priority and says so.
func TestPriority(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: testPriorityClass}, Value: 1000}
	if err := sim.Client.Create(t.Context(), pc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	create(t, MakeUserDeployment("high", ns).Service("api", "api:1", 8080, schedv1.ExposureInternal).Placement(schedv1.Placement{Priority: schedv1.PriorityHigh}).Obj())
	create(t, MakeUserDeployment("low", ns).Service("api", "api:1", 8080, schedv1.ExposureInternal).Placement(schedv1.Placement{Priority: schedv1.PriorityLow}).Obj())

	ud := waitUD(t, ns, "high", "Running", phase(schedv1.UserDeploymentRunning))
	if c := condition(ud, schedv1.ConditionPriorityMapped); c.Status != metav1.ConditionTrue || c.Reason != schedv1.ReasonPriorityMapped {
		t.Errorf("PriorityMapped %+v", c)
	}
	pods, err := runningPods(t.Context(), ns, "high")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Spec.PriorityClassName != testPriorityClass || pods[0].Spec.Priority == nil || *pods[0].Spec.Priority != 1000 {
		t.Errorf("pods %v, want one with PriorityClass %s (priority 1000)", podPriorities(pods), testPriorityClass)
	}

	ud = waitUD(t, ns, "low", "Running with PriorityMapped False", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && condition(ud, schedv1.ConditionPriorityMapped).Status == metav1.ConditionFalse
	})
	if c := condition(ud, schedv1.ConditionPriorityMapped); c.Reason != schedv1.ReasonPriorityUnmapped || !strings.Contains(c.Message, "--priority-class Low=CLASS") {
		t.Errorf("PriorityMapped %+v", c)
	}
	if pods, err = runningPods(t.Context(), ns, "low"); err != nil || len(pods) != 1 || pods[0].Spec.PriorityClassName != "" {
		t.Errorf("pods %v (%v), want one without a PriorityClass", podPriorities(pods), err)
	}
}

func podPriorities(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s:%q/%v", p.Name, p.Spec.PriorityClassName, ptr.Deref(p.Spec.Priority, 0)))
	}
	return out
}

// TestSecretAndConfigChangesRollThePods deploys with the plugin, as a user
// does: a new secret value (deploy --secret) and a config change each roll
// the pods, whose templates carry the new digest.
func TestSecretAndConfigChangesRollThePods(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	deploy := func(args ...string) {
		t.Helper()
		args = append([]string{"deploy", "orders", "-n", ns, "--template", "api-postgres", "--set", "image=orders:1", "--kubeconfig", sim.Kubeconfig}, args...)
		var out bytes.Buffer
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
		root := plugincmd.NewRootCommand(streams)
		root.SetArgs(args)
		if code := plugincmd.Execute(root, streams); code != 0 {
			t.Fatalf("kubectl sched %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
		}
	}
	// rolled waits until each service runs exactly one ready pod and every
	// running pod carries annotation key=value, and returns the value.
	rolled := func(what, key string, want func(string) bool) string {
		t.Helper()
		var got string
		testenv.EventuallyWithin(t, testenv.Timeout, what, func(ctx context.Context) error {
			ud := &schedv1.UserDeployment{}
			if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orders"}, ud); err != nil {
				return err
			}
			if !phase(schedv1.UserDeploymentRunning)(ud) {
				return fmt.Errorf("phase %s", ud.Status.Phase)
			}
			pods, err := runningPods(ctx, ns, "orders")
			if err != nil {
				return err
			}
			perService := map[string]int{}
			for _, p := range pods {
				v := p.Annotations[key]
				if !want(v) {
					return fmt.Errorf("pod %s has %s=%q", p.Name, key, v)
				}
				got = v
				perService[p.Labels[schedv1.LabelService]]++
			}
			if perService["api"] != 1 || perService["postgres"] != 1 {
				return fmt.Errorf("running pods per service %v", perService)
			}
			return nil
		})
		return got
	}
	// By UID: the StatefulSet's pod keeps its name when replaced.
	podNames := func() []string {
		pods, err := runningPods(t.Context(), ns, "orders")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods {
			out = append(out, p.Name+"/"+string(p.UID))
		}
		return out
	}

	// The database keeps its data on a volume; the simulated cluster has no
	// provisioner.
	staticVolume(t, ns, "data-orders-postgres-0", "")
	deploy("--secret", "POSTGRES_PASSWORD=first")
	udHash := func() string {
		ud := &schedv1.UserDeployment{}
		if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "orders"}, ud); err != nil {
			t.Fatal(err)
		}
		return ud.Annotations[schedv1.AnnotationSecretHash]
	}
	first := udHash()
	if first == "" {
		t.Fatal("deploy set no secret hash on the app")
	}
	rolled("the first pods", schedv1.AnnotationSecretHash, func(v string) bool { return v == first })
	configHash := rolled("the first pods' config hash", "sched.kubectl-sched.dev/config-hash", func(v string) bool { return v != "" })
	before := podNames()

	deploy("--secret", "POSTGRES_PASSWORD=second")
	second := udHash()
	if second == first || second == "" {
		t.Fatalf("secret hash %q after a new value, was %q", second, first)
	}
	rolled("pods with the new secret hash", schedv1.AnnotationSecretHash, func(v string) bool { return v == second })
	if after := podNames(); slices.ContainsFunc(after, func(n string) bool { return slices.Contains(before, n) }) {
		t.Errorf("pods %v survived the secret change (before: %v)", after, before)
	}

	before = podNames()
	deploy("--set", "database=orders") // a config key: POSTGRES_DB
	rolled("pods with the new config hash", "sched.kubectl-sched.dev/config-hash", func(v string) bool { return v != "" && v != configHash })
	if after := podNames(); slices.ContainsFunc(after, func(n string) bool { return slices.Contains(before, n) }) {
		t.Errorf("pods %v survived the config change (before: %v)", after, before)
	}
	// The secret is unchanged by that deploy, and so is its hash.
	if h := udHash(); h != second {
		t.Errorf("secret hash %q after a config change, want %q", h, second)
	}
}

// TestCertificates: with cert-manager's CRDs served and a ClusterIssuer
// configured, a public app gets a Certificate for its host (owned by the
// app), its Ingress serves the certificate's Secret, and its status says
// when cert-manager has issued it. A given TLS Secret wins.
func TestCertificates(t *testing.T) {
	ns := namespace(t)
	restartOperator(t, func(o *app.Options) { o.Settings.ClusterIssuer = "letsencrypt" })
	create(t, MakeUserDeployment("shop", ns).Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Obj())
	host := names.HostPrefix("shop", ns) + ".apps.test"
	ud := waitUD(t, ns, "shop", "Running with a pending certificate", func(ud *schedv1.UserDeployment) bool {
		c := condition(ud, schedv1.ConditionCertificateReady)
		return phase(schedv1.UserDeploymentRunning)(ud) && c.Reason == schedv1.ReasonCertificatePending
	})
	if diff := cmp.Diff([]string{"https://" + host + "/"}, ud.Status.URLs); diff != "" {
		t.Errorf("urls (-want +got):\n%s", diff)
	}
	ctx := t.Context()
	cert := &unstructured.Unstructured{}
	cert.SetAPIVersion("cert-manager.io/v1")
	cert.SetKind("Certificate")
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, cert); err != nil {
		t.Fatal(err)
	}
	wantSpec := map[string]any{
		"secretName": "shop.tls",
		"dnsNames":   []any{host},
		"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"},
		// One CertificateRequest kept, not one per renewal for ever.
		"revisionHistoryLimit": int64(1),
	}
	if diff := cmp.Diff(wantSpec, cert.Object["spec"]); diff != "" {
		t.Errorf("Certificate spec (-want +got):\n%s", diff)
	}
	if !metav1.IsControlledBy(cert, ud) {
		t.Errorf("Certificate owners %v, want the app as controller", cert.GetOwnerReferences())
	}
	ing := &networkingv1.Ingress{}
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, ing); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "shop.tls"}}, ing.Spec.TLS); diff != "" {
		t.Errorf("Ingress TLS (-want +got):\n%s", diff)
	}

	// cert-manager reports the certificate issued.
	if err := unstructured.SetNestedSlice(cert.Object, []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired",
	}}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if err := sim.Client.Update(ctx, cert); err != nil {
		t.Fatal(err)
	}
	ud = waitUD(t, ns, "shop", "CertificateReady", func(ud *schedv1.UserDeployment) bool {
		return condition(ud, schedv1.ConditionCertificateReady).Status == metav1.ConditionTrue
	})
	if c := condition(ud, schedv1.ConditionCertificateReady); c.Reason != schedv1.ReasonCertificateIssued || !strings.Contains(c.Message, "up to date") {
		t.Errorf("CertificateReady %+v", c)
	}

	// A TLS Secret of the user's own wins: the Certificate goes.
	update(t, ns, "shop", func(s *schedv1.UserDeploymentSpec) {
		s.Ingress = &schedv1.IngressSpec{TLS: &schedv1.IngressTLS{SecretName: "mine"}}
	})
	gone(t, cert)
	waitUD(t, ns, "shop", "Running without a certificate condition", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && condition(ud, schedv1.ConditionCertificateReady).Type == ""
	})
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, ing); err != nil {
		t.Fatal(err)
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "mine" {
		t.Errorf("Ingress TLS %+v, want the given Secret", ing.Spec.TLS)
	}

	// A host outside the platform's domain, which the namespace's
	// allow-list has, gets no certificate, and says why.
	allowHosts(t, ns, "*.example.com")
	update(t, ns, "shop", func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: "bank.example.com"} })
	waitUD(t, ns, "shop", "CertificateNotRequested", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && condition(ud, schedv1.ConditionCertificateReady).Reason == schedv1.ReasonCertificateNotRequested
	})
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, cert); !apierrors.IsNotFound(err) {
		t.Errorf("a Certificate for a host outside the domain: %v", err)
	}
}

// TestVolumesSurviveStopAndStart: a service with a volume runs as a
// StatefulSet whose claim stays bound to the same volume while the app is
// stopped and when it starts again; it also runs as the service account
// and with the pull secrets it names. Volumes are provisioned statically
// here (the simulated cluster has no provisioner); the controller
// manager's binder binds the claims.
func TestVolumesSurviveStopAndStart(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := t.Context()
	class := "sim-" + ns
	staticVolume(t, ns, "data-vol-db-0", class)
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "db-runner", Namespace: ns}})
	create(t, MakeUserDeployment("vol", ns).Service("db", "postgres:17", 5432, schedv1.ExposureInternal).
		EditService("db", func(s *schedv1.ServiceSpec) {
			s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("1Gi"), MountPath: "/var/lib/postgresql", StorageClass: class}}
			s.ServiceAccountName = "db-runner"
			s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		}).Obj())
	waitUD(t, ns, "vol", "Running", phase(schedv1.UserDeploymentRunning))

	claimKey := types.NamespacedName{Namespace: ns, Name: "data-vol-db-0"}
	boundClaim := func(what string) *corev1.PersistentVolumeClaim {
		t.Helper()
		pvc := &corev1.PersistentVolumeClaim{}
		testenv.EventuallyWithin(t, testenv.Timeout, what, func(ctx context.Context) error {
			if err := sim.Client.Get(ctx, claimKey, pvc); err != nil {
				return err
			}
			if pvc.Status.Phase != corev1.ClaimBound {
				return fmt.Errorf("claim %s", pvc.Status.Phase)
			}
			return nil
		})
		return pvc
	}
	first := boundClaim("the claim bound")
	podUsesClaim := func() {
		t.Helper()
		pods, err := runningPods(ctx, ns, "vol")
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 1 {
			t.Fatalf("%d running pods, want 1", len(pods))
		}
		spec := pods[0].Spec
		var claims []string
		for _, v := range spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims = append(claims, v.PersistentVolumeClaim.ClaimName)
			}
		}
		if !slices.Equal(claims, []string{claimKey.Name}) || spec.ServiceAccountName != "db-runner" || len(spec.ImagePullSecrets) != 1 {
			t.Errorf("pod %s: claims %v, service account %q, pull secrets %v", pods[0].Name, claims, spec.ServiceAccountName, spec.ImagePullSecrets)
		}
	}
	podUsesClaim()
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "vol-db"}, &appsv1.StatefulSet{}); err != nil {
		t.Errorf("StatefulSet: %v", err)
	}

	update(t, ns, "vol", func(s *schedv1.UserDeploymentSpec) { s.State = schedv1.StateStopped })
	waitUD(t, ns, "vol", "Stopped with no pods left", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentStopped)(ud) && condition(ud, schedv1.ConditionProgressing).Status == metav1.ConditionFalse
	})
	if got := boundClaim("the claim kept while stopped"); got.UID != first.UID || got.Spec.VolumeName != first.Spec.VolumeName {
		t.Errorf("claim %s on %s while stopped, was %s on %s", got.UID, got.Spec.VolumeName, first.UID, first.Spec.VolumeName)
	}

	update(t, ns, "vol", func(s *schedv1.UserDeploymentSpec) { s.State = schedv1.StateRunning })
	waitUD(t, ns, "vol", "Running again", phase(schedv1.UserDeploymentRunning))
	if got := boundClaim("the claim after start"); got.UID != first.UID || got.Spec.VolumeName != first.Spec.VolumeName {
		t.Errorf("claim %s on %s after start, was %s on %s", got.UID, got.Spec.VolumeName, first.UID, first.Spec.VolumeName)
	}
	podUsesClaim()
}

// TestZoneSpread: several replicas with multiZone spread over the simulated
// cluster's three zones, no zone more than one pod ahead of another.
func TestZoneSpread(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("spread", ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Replicas("web", 6).
		Placement(schedv1.Placement{NodePools: []string{"general"}, MultiZone: true}).Obj())
	waitUD(t, ns, "spread", "Running", phase(schedv1.UserDeploymentRunning))
	pods, err := runningPods(t.Context(), ns, "spread")
	if err != nil {
		t.Fatal(err)
	}
	perZone := map[string]int{}
	for _, p := range pods {
		node := &corev1.Node{}
		if err := sim.Client.Get(t.Context(), types.NamespacedName{Name: p.Spec.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		perZone[node.Labels[schedv1.NodeLabelZone]]++
	}
	counts := slices.Collect(maps.Values(perZone))
	if len(pods) != 6 || len(perZone) != 3 || slices.Max(counts)-slices.Min(counts) > 1 {
		t.Errorf("%d pods per zone %v, want 6 over three zones with a skew of at most 1", len(pods), perZone)
	}
}

// staticVolume creates a 1Gi volume reserved for the claim ns/claim, which
// the controller manager's binder binds to it: the simulated cluster has no
// provisioner.
func staticVolume(t *testing.T, ns, claim, class string) {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim},
		},
	}
	create(t, pv)
	t.Cleanup(func() { _ = sim.Client.Delete(context.Background(), pv) })
}

// TestAutoscalerKeepsItsReplicas: with a HorizontalPodAutoscaler on a
// service's Deployment, a change to the app does not reset the replicas it
// chose, and stopping still stops.
func TestAutoscalerKeepsItsReplicas(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("scaled", ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Replicas("web", 2).Obj())
	waitUD(t, ns, "scaled", "Running", phase(schedv1.UserDeploymentRunning))
	create(t, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled-web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
		},
	})

	// Scale as the autoscaler does, through the scale subresource. Until
	// the operator's cache holds the autoscaler, it repairs the replicas
	// back to the app's: scale again until the app reports the 5.
	ctx := t.Context()
	dep := &appsv1.Deployment{}
	key := types.NamespacedName{Namespace: ns, Name: "scaled-web"}
	testenv.EventuallyWithin(t, testenv.Timeout, "the app to report the autoscaler's 5 replicas", func(ctx context.Context) error {
		if err := sim.Client.Get(ctx, key, dep); err != nil {
			return err
		}
		if *dep.Spec.Replicas != 5 {
			scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
			return sim.Client.SubResource("scale").Update(ctx, dep, client.WithSubResourceBody(scale))
		}
		ud := &schedv1.UserDeployment{}
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "scaled"}, ud); err != nil {
			return err
		}
		if len(ud.Status.Services) != 1 || ud.Status.Services[0].DesiredReplicas != 5 {
			return fmt.Errorf("services %+v", ud.Status.Services)
		}
		return nil
	})
	// A change to the app is applied, and the replicas stay the autoscaler's.
	update(t, ns, "scaled", func(s *schedv1.UserDeploymentSpec) { s.Services[0].Env = []schedv1.EnvVar{{Name: "V", Value: "2"}} })
	ud := waitUD(t, ns, "scaled", "Running with 5 replicas", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && ud.Status.ObservedGeneration == ud.Generation &&
			len(ud.Status.Services) == 1 && ud.Status.Services[0].DesiredReplicas == 5 && ud.Status.Services[0].ReadyReplicas == 5
	})
	if err := sim.Client.Get(ctx, key, dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Env; len(got) != 1 || got[0].Value != "2" {
		t.Errorf("env %v: the app's change was not applied", got)
	}
	if *dep.Spec.Replicas != 5 {
		t.Errorf("replicas %d after the app changed, want the autoscaler's 5", *dep.Spec.Replicas)
	}
	if c := condition(ud, schedv1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v", c)
	}

	update(t, ns, "scaled", func(s *schedv1.UserDeploymentSpec) { s.State = schedv1.StateStopped })
	waitUD(t, ns, "scaled", "Stopped", phase(schedv1.UserDeploymentStopped))
	if err := sim.Client.Get(ctx, key, dep); err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 0 {
		t.Errorf("replicas %d while stopped, want 0", *dep.Spec.Replicas)
	}
}

// TestAppRunsWherePodSecurityIsRestricted: every service's pods, a
// stateful one and one with a security context of its own included, pass
// Pod Security "restricted" admission.
func TestAppRunsWherePodSecurityIsRestricted(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	nsObj := &corev1.Namespace{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if err := sim.Client.Update(t.Context(), nsObj); err != nil {
		t.Fatal(err)
	}
	class := "sim-" + ns
	staticVolume(t, ns, "data-safe-db-0", class)
	create(t, MakeUserDeployment("safe", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
		Service("api", "shop-api:1", 8080, schedv1.ExposureInternal).
		EditService("api", func(s *schedv1.ServiceSpec) {
			s.SecurityContext = &schedv1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true), RunAsUser: ptr.To[int64](1000)}
		}).
		Service("db", "postgres:17", 5432, schedv1.ExposureInternal).
		EditService("db", func(s *schedv1.ServiceSpec) {
			s.Volumes = []schedv1.ServiceVolume{{Name: "data", MountPath: "/var/lib/postgresql", Size: resource.MustParse("1Gi"), StorageClass: class}}
		}).Obj())
	ud := waitUD(t, ns, "safe", "Running", phase(schedv1.UserDeploymentRunning))
	if ud.Status.Ready != "3/3" {
		t.Errorf("ready %q, want 3/3", ud.Status.Ready)
	}
}

// TestMissingServiceAccountReported: a service runs only as an existing
// service account of the app's namespace (ServiceAccount admission refuses
// its pods otherwise); the app says which one is missing.
func TestMissingServiceAccountReported(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		EditService("api", func(s *schedv1.ServiceSpec) { s.ServiceAccountName = "nobody" }).Obj())
	ud := waitUD(t, ns, "app", "Degraded", phase(schedv1.UserDeploymentDegraded))
	if c := condition(ud, schedv1.ConditionDegraded); !strings.Contains(c.Message, `serviceaccount "nobody" not found`) {
		t.Errorf("Degraded condition %+v, want it to name the missing service account", c)
	}
}

// TestQuotaIsNamed: an app whose pods a full quota refuses says so, naming
// the quota (as a tenant tier's would be).
func TestQuotaIsNamed(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-tier", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}})
	// The API server's quota admission learns of the quota from its informer.
	testenv.EventuallyWithin(t, testenv.Timeout, "the quota to be enforced", func(ctx context.Context) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if err := sim.Client.Create(ctx, pod, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "kubectl-sched-tier") {
			return fmt.Errorf("dry-run pod: %v", err)
		}
		return nil
	})
	create(t, MakeUserDeployment("app", ns).Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj())
	ud := waitUD(t, ns, "app", "Degraded", phase(schedv1.UserDeploymentDegraded))
	if c := condition(ud, schedv1.ConditionDegraded); !strings.Contains(c.Message, "exceeded quota: kubectl-sched-tier") {
		t.Errorf("Degraded %+v, want the quota named", c)
	}
}

// TestConvergesUnderAConflictingWriter: another client keeps relabelling
// the app (each write a new resourceVersion, so the operator's status
// patches with the optimistic lock conflict) while it rolls out; it still
// reaches Running, with a status for its current generation.
func TestConvergesUnderAConflictingWriter(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("busy", ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Replicas("web", 3).Obj())
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var writes atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			ud := &schedv1.UserDeployment{}
			if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "busy"}, ud); err == nil {
				if ud.Labels == nil {
					ud.Labels = map[string]string{}
				}
				ud.Labels["touched"] = fmt.Sprint(writes.Load())
				if sim.Client.Update(ctx, ud) == nil {
					writes.Add(1)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	waitUD(t, ns, "busy", "Running while relabelled", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && ud.Status.ObservedGeneration == ud.Generation && ud.Status.Ready == "1/1"
	})
	// Keep writing after it converged, ten writes at least (counted, not
	// timed: a fast rollout left the writer too few): it must stay converged.
	after := writes.Load()
	testenv.EventuallyWithin(t, testenv.Timeout, "ten more conflicting writes", func(context.Context) error {
		if n := writes.Load() - after; n < 10 {
			return fmt.Errorf("%d so far", n)
		}
		return nil
	})
	stop()
	<-done
	ud := waitUD(t, ns, "busy", "still Running", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && ud.Status.ObservedGeneration == ud.Generation
	})
	if ud.Status.Services[0].ReadyReplicas != 3 {
		t.Errorf("services %+v", ud.Status.Services)
	}
}

// TestDroppedFieldIsRemoved: the operator creates a new object with a plain
// create (one request) and applies later changes with server-side apply.
// A field the spec drops must go from the object, which needs the create's
// managed fields moved to the apply's owner first.
func TestDroppedFieldIsRemoved(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		EditService("api", func(s *schedv1.ServiceSpec) {
			s.Env = []schedv1.EnvVar{{Name: "KEEP", Value: "1"}, {Name: "DROP", Value: "2"}}
			s.Args = []string{"--verbose"}
		}).Obj())
	waitUD(t, ns, "app", "Running", phase(schedv1.UserDeploymentRunning))

	update(t, ns, "app", func(s *schedv1.UserDeploymentSpec) {
		s.Services[0].Env = s.Services[0].Env[:1]
		s.Services[0].Args = nil
	})
	key := types.NamespacedName{Namespace: ns, Name: "app-api"}
	testenv.EventuallyWithin(t, testenv.Timeout, "DROP and the args removed from Deployment app-api", func(ctx context.Context) error {
		dep := &appsv1.Deployment{}
		if err := sim.Client.Get(ctx, key, dep); err != nil {
			return err
		}
		c := dep.Spec.Template.Spec.Containers[0]
		var env []string
		for _, e := range c.Env {
			env = append(env, e.Name)
		}
		if slices.Contains(env, "DROP") || len(c.Args) > 0 {
			return fmt.Errorf("env %v, args %v", env, c.Args)
		}
		if !slices.Contains(env, "KEEP") {
			return fmt.Errorf("env %v lost KEEP", env)
		}
		for _, m := range dep.ManagedFields {
			if m.Manager == "kubectl-sched-operator" && m.Operation != metav1.ManagedFieldsOperationApply {
				return fmt.Errorf("managed fields still hold the create's entry: %+v", m)
			}
		}
		return nil
	})
}
