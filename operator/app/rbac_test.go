package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// TestOperatorMayDoOnlyItsJob asks the API server, with SubjectAccessReviews
// for the operator's service account bound to its generated role, what it
// may and may not do, and tries the one thing RBAC cannot narrow (patching
// pods) against the admission policy that does.
func TestOperatorMayDoOnlyItsJob(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	opCfg, err := testenv.OperatorConfig(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + testenv.OperatorNamespace + ":" + testenv.OperatorServiceAccount
	can := func(verb, group, resource, ns string) bool {
		t.Helper()
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testenv.OperatorNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns},
		}}
		if err := env.Client.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
	for _, c := range []struct {
		verb, group, resource string
		allowed               bool
	}{
		{"create", "batch", "jobs", true},
		{"create", "apps", "deployments", true},
		{"patch", "", "pods", true},
		{"create", schedv1.GroupVersion.Group, "agenttasks", true},
		// A CronWorkflow's runs; the CronWorkflows themselves are read only.
		{"create", schedv1.GroupVersion.Group, "workflows", true},
		{"patch", schedv1.GroupVersion.Group, "cronworkflows/status", true},
		{"create", schedv1.GroupVersion.Group, "cronworkflows", false},
		{"update", schedv1.GroupVersion.Group, "cronworkflows", false},
		{"list", "", "namespaces", true},
		// A run from a template: its spec written once, the template
		// copied in (kubectl-sched-workflow-spec holds it to that); the
		// templates read one by one, never listed or written.
		{"update", schedv1.GroupVersion.Group, "workflows", true},
		{"patch", schedv1.GroupVersion.Group, "workflows", false},
		{"get", schedv1.GroupVersion.Group, "workflowtemplates", true},
		{"list", schedv1.GroupVersion.Group, "workflowtemplates", false},
		{"create", schedv1.GroupVersion.Group, "workflowtemplates", false},
		{"update", schedv1.GroupVersion.Group, "workflowtemplates", false},
		{"get", schedv1.GroupVersion.Group, "clusterworkflowtemplates", true},
		{"create", schedv1.GroupVersion.Group, "clusterworkflowtemplates", false},
		// An app's revisions: made and trimmed, never changed.
		{"create", "apps", "controllerrevisions", true},
		{"delete", "apps", "controllerrevisions", true},
		{"update", "apps", "controllerrevisions", false},
		{"patch", "apps", "controllerrevisions", false},
		// Nor does it ever write an app's spec: a rollback changes what it derives.
		{"patch", schedv1.GroupVersion.Group, "userdeployments", false},
		{"update", schedv1.GroupVersion.Group, "userdeployments", false},
		// A workflow's workspaces: claims made, read back by name, never
		// listed, changed or deleted (the garbage collector deletes them).
		{"create", "", "persistentvolumeclaims", true},
		{"get", "", "persistentvolumeclaims", true},
		{"list", "", "persistentvolumeclaims", false},
		{"update", "", "persistentvolumeclaims", false},
		{"patch", "", "persistentvolumeclaims", false},
		{"delete", "", "persistentvolumeclaims", false},
		// What a deputy must not be able to do for anyone.
		{"get", "", "secrets", false},
		{"list", "", "secrets", false},
		{"create", "", "pods", false},
		{"delete", "", "namespaces", false},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", false},
		// RoleBindings: created only, and the confinement policy holds
		// them to its own binding to read pods' logs (confinement_test).
		{"create", "rbac.authorization.k8s.io", "rolebindings", true},
		{"update", "rbac.authorization.k8s.io", "rolebindings", false},
		{"delete", "rbac.authorization.k8s.io", "rolebindings", false},
		{"create", "rbac.authorization.k8s.io", "roles", false},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", false},
		{"escalate", "rbac.authorization.k8s.io", "clusterroles", false},
		{"create", "", "serviceaccounts/token", false},
		{"update", "", "nodes", false},
		// Nodes: patch, for one label (the node patch policy below).
		{"patch", "", "nodes", true},
		{"delete", "", "nodes", false},
		{"create", "", "pods/exec", false},
		// Namespaces are install's to make: the operator only reads them.
		{"create", "", "namespaces", false},
		{"patch", "", "namespaces", false},
		// Privileged DaemonSets only in the scheduler namespace (its Role).
		{"create", "apps", "daemonsets", false},
	} {
		if got := can(c.verb, c.group, c.resource, "tenant-a"); got != c.allowed {
			t.Errorf("operator may %s %s.%s: %v, want %v", c.verb, c.resource, c.group, got, c.allowed)
		}
	}
	// Pods: evicted (an app's, off a node whose CPU scheduler detached),
	// deleted (a succeeded task's; the policy below allows only its Jobs'
	// pods), never exec'd into or bound.
	for _, c := range []struct {
		verb, subresource string
		allowed           bool
	}{
		{"create", "eviction", true},
		{"delete", "", true},
		{"create", "binding", false},
		{"update", "status", false},
		// Logs only where it bound itself to kubectl-sched-operator-pod-logs.
		{"get", "log", false},
	} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testenv.OperatorNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: c.verb, Resource: "pods", Subresource: c.subresource, Namespace: "tenant-a"},
		}}
		if err := env.Client.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != c.allowed {
			t.Errorf("operator may %s pods/%s: %v, want %v", c.verb, c.subresource, review.Status.Allowed, c.allowed)
		}
	}
	// The one role it may bind, by name.
	for name, allowed := range map[string]bool{schedv1.OperatorPodLogsRole: true, "admin": false, "kubectl-sched-operator": false} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testenv.OperatorNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: name, Namespace: "tenant-a"},
		}}
		if err := env.Client.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != allowed {
			t.Errorf("operator may bind clusterrole %s: %v, want %v", name, review.Status.Allowed, allowed)
		}
	}
	// CustomResourceDefinitions: only the optional APIs', by name, read.
	canCRD := func(verb, name string) bool {
		t.Helper()
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testenv.OperatorNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: name},
		}}
		if err := env.Client.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
	for _, c := range []struct {
		verb, name string
		allowed    bool
	}{
		{"get", "externalsecrets.external-secrets.io", true},
		{"watch", "certificates.cert-manager.io", true},
		{"list", "ingressroutes.traefik.io", true},
		{"list", "", false}, // every CRD
		{"get", "userdeployments.sched.kubectl-sched.dev", false},
		{"update", "externalsecrets.external-secrets.io", false},
		{"delete", "certificates.cert-manager.io", false},
		{"create", "", false},
	} {
		if got := canCRD(c.verb, c.name); got != c.allowed {
			t.Errorf("operator may %s CustomResourceDefinition %q: %v, want %v", c.verb, c.name, got, c.allowed)
		}
	}
	for _, verb := range []string{"create", "update", "delete", "list", "watch"} {
		if !can(verb, "apps", "daemonsets", schedv1.DefaultSchedulerNamespace) {
			t.Errorf("operator may not %s daemonsets in %s, where SchedExts need them", verb, schedv1.DefaultSchedulerNamespace)
		}
	}

	// Patching pods: only to remove the outputs finalizer.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "task-pod", Namespace: "default", Labels: map[string]string{"team": "a"}, Finalizers: []string{schedv1.FinalizerOutputs}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	op, err := client.New(opCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	relabel := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"b"}}}`))
	// Policies take effect asynchronously.
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the pod patch policy to be enforced", func(context.Context) error {
		if err := op.Patch(ctx, pod.DeepCopy(), relabel, client.DryRunAll); !apierrors.IsForbidden(err) {
			return fmt.Errorf("dry-run relabel: %v", err)
		}
		return nil
	})
	if err := op.Patch(ctx, pod.DeepCopy(), relabel); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may only remove its sched.kubectl-sched.dev/outputs finalizer") {
		t.Errorf("operator relabelling a pod: err = %v, want forbidden by the policy", err)
	}
	image := client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"c","image":"evil"}]}}`))
	if err := op.Patch(ctx, pod.DeepCopy(), image); !apierrors.IsForbidden(err) {
		t.Errorf("operator changing a pod's image: err = %v, want forbidden", err)
	}
	// A stolen token re-parenting a pod to an owner that does not exist
	// would have the garbage collector delete it; removing the finalizer
	// in the same patch gets it no further.
	reparent := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null,"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"0b4a2e8c-0000-4000-8000-00000000dead"}]}}`))
	if err := op.Patch(ctx, pod.DeepCopy(), reparent); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may only remove its sched.kubectl-sched.dev/outputs finalizer") {
		t.Errorf("operator re-parenting a pod: err = %v, want forbidden by the policy", err)
	}
	release := client.RawPatch(types.StrategicMergePatchType, []byte(schedv1.ReleaseOutputsPatch))
	if err := op.Patch(ctx, pod.DeepCopy(), release); err != nil {
		t.Errorf("operator releasing its finalizer: %v", err)
	}
	got := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 || got.Labels["team"] != "a" {
		t.Errorf("pod finalizers %v labels %v, want the finalizer gone and the labels as they were", got.Finalizers, got.Labels)
	}

	// Deleting pods: only those a task's Job made.
	jobController := rest.CopyConfig(env.Config)
	jobController.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:job-controller",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	asJobController, err := client.New(jobController, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	taskLabels := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelAgentTask: "t"}
	jobOwner := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "t", UID: "0b4a2e8c-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
	appLabels := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelUserDeployment: "shop"}
	rsOwner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "shop-web-1", UID: "0b4a2e8c-0000-4000-8000-000000000002", Controller: ptr.To(true)}}
	for name, c := range map[string]struct {
		labels  map[string]string
		owners  []metav1.OwnerReference
		creator client.Client
		failed  bool
		allowed bool
	}{
		"a pod of nobody's":      {labels: map[string]string{"team": "a"}, creator: env.Client},
		"an app's pod":           {labels: appLabels, creator: env.Client},
		"a Job's pod of no task": {labels: map[string]string{"team": "a"}, owners: jobOwner, creator: asJobController},
		"a task's Job's pod":     {labels: taskLabels, owners: jobOwner, creator: asJobController, allowed: true},
		// An app's evicted pods stay Failed until the cluster's pod
		// garbage collector; only those may go.
		"an app's ReplicaSet's running pod": {labels: appLabels, owners: rsOwner, creator: env.Client},
		"a failed pod of nobody's":          {labels: map[string]string{"team": "a"}, owners: rsOwner, creator: env.Client, failed: true},
		"an app's ReplicaSet's failed pod":  {labels: appLabels, owners: rsOwner, creator: env.Client, failed: true, allowed: true},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "deletee-", Namespace: "default", Labels: c.labels, OwnerReferences: c.owners},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}
		if err := c.creator.Create(ctx, pod); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.failed {
			pod.Status.Phase = corev1.PodFailed
			if err := env.Client.Status().Update(ctx, pod); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		err := op.Delete(ctx, pod)
		switch {
		case c.allowed && err != nil:
			t.Errorf("operator deleting %s: %v", name, err)
		case !c.allowed && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may delete only the pods of its tasks' Jobs and the failed pods of its apps' ReplicaSets")):
			t.Errorf("operator deleting %s: err = %v, want forbidden by the policy", name, err)
		}
	}

	// Patching nodes: only the CPU scheduler label, to a scheduler's name.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{schedv1.NodeLabelPool: "general"}}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	setLabel := func(key, value string) client.Patch {
		return client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)))
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the node patch policy to be enforced", func(context.Context) error {
		if err := op.Patch(ctx, node.DeepCopy(), setLabel(schedv1.NodeLabelPool, "gpu"), client.DryRunAll); !apierrors.IsForbidden(err) {
			return fmt.Errorf("dry-run relabel: %v", err)
		}
		return nil
	})
	for name, c := range map[string]struct {
		patch client.Patch
		msg   string
	}{
		"another label":            {setLabel(schedv1.NodeLabelPool, "gpu"), "may only set or remove the label node.kubectl-sched.dev/cpu-scheduler"},
		"a new label":              {setLabel("node-role.kubernetes.io/control-plane", ""), "may only set or remove the label"},
		"an annotation":            {client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"a":"b"}}}`)), "may only set or remove the label"},
		"cordon":                   {client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`)), "may only set or remove the label"},
		"a taint":                  {client.RawPatch(types.MergePatchType, []byte(`{"spec":{"taints":[{"key":"k","effect":"NoExecute"}]}}`)), "may only set or remove the label"},
		"a value no scheduler has": {setLabel(schedv1.NodeLabelCPUScheduler, "anything"), "must name a sched_ext scheduler"},
	} {
		if err := op.Patch(ctx, node.DeepCopy(), c.patch); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("operator patching a node's %s: err = %v, want forbidden with %q", name, err, c.msg)
		}
	}
	if err := op.Patch(ctx, node.DeepCopy(), setLabel(schedv1.NodeLabelCPUScheduler, "scx_lavd")); err != nil {
		t.Errorf("operator labelling a node with its CPU scheduler: %v", err)
	}
	gotNode := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), gotNode); err != nil {
		t.Fatal(err)
	}
	if got := gotNode; got.Labels[schedv1.NodeLabelCPUScheduler] != "scx_lavd" || len(got.Labels) != 2 || len(got.Annotations) != 0 || !equality.Semantic.DeepEqual(got.Spec, node.Spec) {
		t.Errorf("node labels %v annotations %v spec %+v: want only the CPU scheduler label added (spec %+v)", got.Labels, got.Annotations, got.Spec, node.Spec)
	}
	remove := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, schedv1.NodeLabelCPUScheduler)))
	if err := op.Patch(ctx, node.DeepCopy(), remove); err != nil {
		t.Errorf("operator removing a node's CPU scheduler label: %v", err)
	}
}
