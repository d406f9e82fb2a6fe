package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// restrictedPod is a pod template as the operator renders one for a task or
// an app; edit makes it ask for more.
func restrictedPod(edit func(*corev1.PodTemplateSpec)) corev1.PodTemplateSpec {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{
			SecurityContext: podsecurity.Pod(),
			Containers:      []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: podsecurity.Container(nil)}},
		},
	}
	if edit != nil {
		edit(&tmpl)
	}
	return tmpl
}

// managed are the labels the operator puts on what it makes; it writes
// nothing else (kubectl-sched-operator-managed).
func managed() map[string]string {
	return map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}
}

func deploymentIn(ns string, edit func(*corev1.PodTemplateSpec)) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns, Labels: managed()},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: restrictedPod(edit),
		},
	}
}

func jobIn(ns string, edit func(*corev1.PodTemplateSpec)) *batchv1.Job {
	tmpl := restrictedPod(edit)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: ns, Labels: managed()}, Spec: batchv1.JobSpec{Template: tmpl}}
}

func privileged(t *corev1.PodTemplateSpec) {
	t.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
}

// TestOperatorAccountIsConfined acts as the operator's service account,
// with its generated RBAC, and tries what a stolen token would: every write
// below is one RBAC allows (or, for DaemonSets, one a widened role would)
// and the confinement policy refuses, naming why. What the operator really
// writes still passes.
func TestOperatorAccountIsConfined(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	op := operatorClient(t, env)
	for name, labels := range map[string]map[string]string{
		"tenant-a":    nil,
		"tenant-free": {schedv1.LabelAllowPrivilegedPods: "true"},
	} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}
	const opNS, schedNS = testenv.OperatorNamespace, schedv1.DefaultSchedulerNamespace
	// Policies take effect asynchronously. Not fatal: without the policy
	// every case below says what it got.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		err := op.Create(ctx, deploymentIn("kube-system", nil), client.DryRunAll)
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "writes nothing in kube-system") {
			break
		}
	}

	// A role wider than the generated one, as a stolen token might meet:
	// DaemonSets in a tenant namespace are then refused by the policy alone.
	wider := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-widened", Namespace: "tenant-a"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"create"}}},
	}
	widened := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-widened", Namespace: "tenant-a"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: wider.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: testenv.OperatorServiceAccount, Namespace: opNS}},
	}
	for _, obj := range []client.Object{wider, widened} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	user := "system:serviceaccount:" + opNS + ":" + testenv.OperatorServiceAccount
	for _, ns := range []string{"tenant-a", "kube-system", opNS, schedNS} {
		if err := testenv.WaitAllowed(ctx, env.Client, user, authorizationAttrs("create", "apps", "deployments", ns)); err != nil {
			t.Fatalf("the refusals below must be the policy's, not RBAC's: %v", err)
		}
	}
	if err := testenv.WaitAllowed(ctx, env.Client, user, authorizationAttrs("create", "apps", "daemonsets", "tenant-a")); err != nil {
		t.Fatal(err)
	}

	daemonSet := func(ns string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns, Labels: managed()}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Template: restrictedPod(privileged)}}
	}
	refused := map[string]struct {
		obj  client.Object
		want string
	}{
		"a Deployment in kube-system":             {deploymentIn("kube-system", nil), "writes nothing in kube-system"},
		"a ConfigMap in kube-public":              {&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "kube-public", Labels: managed()}}, "writes nothing in kube-public"},
		"a Service in kube-node-lease":            {&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "kube-node-lease", Labels: managed()}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, "writes nothing in kube-node-lease"},
		"a Deployment in its namespace":           {deploymentIn(opNS, func(t *corev1.PodTemplateSpec) { t.Spec.ServiceAccountName = testenv.OperatorServiceAccount }), "writes only its leader Lease and Events"},
		"a ConfigMap in its namespace":            {&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: opNS, Labels: managed()}}, "writes only its leader Lease and Events"},
		"a Job in the scheduler namespace":        {jobIn(schedNS, nil), "writes only SchedExt DaemonSets"},
		"a Deployment in the scheduler namespace": {deploymentIn(schedNS, privileged), "writes only SchedExt DaemonSets"},
		"a DaemonSet in a tenant namespace":       {daemonSet("tenant-a"), "writes DaemonSets only in the scheduler namespace " + schedNS},
		"a privileged Deployment":                 {deploymentIn("tenant-a", privileged), "a privileged container"},
		"a Job with a hostPath volume": {jobIn("tenant-a", func(t *corev1.PodTemplateSpec) {
			t.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}), "a hostPath volume"},
		"a Deployment on the host network": {deploymentIn("tenant-a", func(t *corev1.PodTemplateSpec) { t.Spec.HostNetwork = true; t.Spec.HostPID = true }), "hostNetwork, hostPID"},
		"a Deployment that keeps capabilities": {deploymentIn("tenant-a", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].SecurityContext.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}
		}), "capabilities (drop must hold ALL"},
		"a Job as root": {jobIn("tenant-a", func(t *corev1.PodTemplateSpec) {
			t.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
			t.Spec.Containers[0].SecurityContext.RunAsNonRoot = nil
			t.Spec.SecurityContext.RunAsNonRoot = nil
		}), "running as root"},
		"a Deployment unconfined by annotation": {deploymentIn("tenant-a", func(t *corev1.PodTemplateSpec) {
			t.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}
		}), "an annotation that unconfines"},
		"a Deployment probing another host": {deploymentIn("tenant-a", func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1", Port: intstr.FromInt32(22)}}}
		}), "a probe or lifecycle handler aimed at another host"},
	}
	for name, tc := range refused {
		t.Run("refused: "+name, func(t *testing.T) {
			err := op.Create(ctx, tc.obj, client.DryRunAll)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want forbidden saying %q", err, tc.want)
			}
		})
	}
	t.Run("refused: deleting in kube-system", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "kube-system", Labels: managed()}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := op.Delete(ctx, cm, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "writes nothing in kube-system") {
			t.Errorf("err = %v, want forbidden", err)
		}
	})

	// Evictions (an app's pods off a node whose CPU scheduler detached):
	// RBAC allows them anywhere; the policy keeps them out of the system
	// namespaces, the operator's own and the scheduler namespace, whose
	// loaders it must not move.
	evict := func(ns string) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "evictee", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := env.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		return op.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}})
	}
	for ns, want := range map[string]string{
		"kube-system": "writes nothing in kube-system",
		opNS:          "writes only its leader Lease and Events",
		schedNS:       "writes only SchedExt DaemonSets",
	} {
		t.Run("refused: evicting a pod in "+ns, func(t *testing.T) {
			if err := evict(ns); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want forbidden saying %q", err, want)
			}
		})
	}
	t.Run("allowed: evicting a pod in a tenant namespace", func(t *testing.T) {
		if err := evict("tenant-a"); err != nil {
			t.Errorf("refused: %v", err)
		}
	})

	// What the operator writes.
	allowed := map[string]client.Object{
		"a restricted Deployment":                           deploymentIn("tenant-a", nil),
		"a restricted Job":                                  jobIn("tenant-a", nil),
		"a privileged Deployment where opted out":           deploymentIn("tenant-free", privileged),
		"a privileged DaemonSet in the scheduler namespace": daemonSet(schedNS),
		"its leader Lease":                                  &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: opNS}},
		"an Event in its namespace": &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: opNS},
			InvolvedObject: corev1.ObjectReference{Kind: "Lease", Namespace: opNS, Name: "l"}},
	}
	for name, obj := range allowed {
		t.Run("allowed: "+name, func(t *testing.T) {
			if err := op.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
	// A privileged Job made while its namespace was opted out can still be
	// stopped: an update that keeps the template is not refused.
	t.Run("allowed: suspending a privileged Job", func(t *testing.T) {
		job := jobIn("tenant-a", privileged)
		if err := env.Client.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
		suspend := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
		if err := op.Patch(ctx, job, suspend); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	// A task's Job: the operator suspends it (cancel, or the hold of a
	// retry's backoff) and resumes it with a new activeDeadlineSeconds;
	// nothing else of it, whatever RBAC's patch on Jobs would allow.
	t.Run("a task's Job: only suspend and activeDeadlineSeconds", func(t *testing.T) {
		job := jobIn("tenant-a", nil)
		job.Name = "task"
		job.Labels = map[string]string{"team": "a", schedv1.LabelManagedBy: schedv1.ManagedByValue}
		job.Spec.Suspend = ptr.To(true)
		job.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
		if err := env.Client.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
		for name, patch := range map[string]string{
			"resume with what is left of the timeout": `{"spec":{"suspend":false,"activeDeadlineSeconds":42}}`,
			"hold": `{"spec":{"suspend":true}}`,
		} {
			if err := op.Patch(ctx, job.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)), client.DryRunAll); err != nil {
				t.Errorf("allowed: %s: refused: %v", name, err)
			}
		}
		for name, patch := range map[string]string{
			"more retries":            `{"spec":{"backoffLimit":10}}`,
			"more pods at once":       `{"spec":{"parallelism":5}}`,
			"a TTL":                   `{"spec":{"ttlSecondsAfterFinished":1}}`,
			"a label":                 `{"metadata":{"labels":{"team":"b"}}}`,
			"an annotation":           `{"metadata":{"annotations":{"note":"x"}}}`,
			"a finalizer":             `{"metadata":{"finalizers":["example.com/keep"]}}`,
			"the suspended template":  `{"spec":{"template":{"metadata":{"annotations":{"x":"y"}}}}}`,
			"resume and more retries": `{"spec":{"suspend":false,"backoffLimit":10}}`,
		} {
			err := op.Patch(ctx, job.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)), client.DryRunAll)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "changes a Job only in spec.suspend and spec.activeDeadlineSeconds") {
				t.Errorf("refused: %s: err = %v, want forbidden", name, err)
			}
		}
	})
	// RoleBindings: RBAC lets the operator bind any role whose rights it
	// holds (and kubectl-sched-operator-pod-logs, which it may bind); the
	// policy lets it make only its own binding to read pods' logs.
	t.Run("RoleBindings: only its own, to read pods' logs", func(t *testing.T) {
		logsRole := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: schedv1.OperatorPodLogsRole}
		self := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: testenv.OperatorServiceAccount, Namespace: opNS}
		binding := func(ns, name string, role rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
			return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: managed()}, RoleRef: role, Subjects: subjects}
		}
		if err := op.Create(ctx, binding("tenant-a", schedv1.OperatorPodLogsRole, logsRole, self), client.DryRunAll); err != nil {
			t.Errorf("allowed: its log binding in a tenant namespace: refused: %v", err)
		}
		const only = "creates only the RoleBinding kubectl-sched-operator-pod-logs"
		for name, tc := range map[string]struct {
			obj  *rbacv1.RoleBinding
			want string
		}{
			"its rights handed to another": {binding("tenant-a", "x", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: wider.Name},
				rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}), only},
			"its log role for another account": {binding("tenant-a", schedv1.OperatorPodLogsRole, logsRole,
				rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "tenant-a"}), only},
			"its log role for itself and another": {binding("tenant-a", schedv1.OperatorPodLogsRole, logsRole, self,
				rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}), only},
			"its log binding in kube-system":   {binding("kube-system", schedv1.OperatorPodLogsRole, logsRole, self), "writes nothing in kube-system"},
			"its log binding in its namespace": {binding(opNS, schedv1.OperatorPodLogsRole, logsRole, self), "writes only its leader Lease and Events"},
		} {
			err := op.Create(ctx, tc.obj, client.DryRunAll)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refused: %s: err = %v, want forbidden saying %q", name, err, tc.want)
			}
		}
	})
	t.Run("allowed: scaling down a privileged Deployment, not changing its template", func(t *testing.T) {
		dep := deploymentIn("tenant-a", privileged)
		dep.Name = "old-privileged"
		if err := env.Client.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
		scale := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))
		if err := op.Patch(ctx, dep.DeepCopy(), scale); err != nil {
			t.Errorf("refused: %v", err)
		}
		annotate := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"template":{"metadata":{"annotations":{"restartedAt":"now"}}}}}`))
		if err := op.Patch(ctx, dep.DeepCopy(), annotate, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a privileged container") {
			t.Errorf("changing the privileged template: err = %v, want forbidden", err)
		}
	})

	// What others made in a namespace the operator serves is not the
	// operator's to change or delete, whatever RBAC grants it there: the
	// tenant's own Deployment, ConfigMap and Service, an admin's quota and
	// NetworkPolicy. Nor does it create anything it does not label.
	t.Run("others' objects", func(t *testing.T) {
		theirs := map[string]client.Object{
			"a Deployment":    &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "tenant-a"}, Spec: deploymentIn("tenant-a", nil).Spec},
			"a ConfigMap":     &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "tenant-a"}, Data: map[string]string{"k": "v"}},
			"a Service":       &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "tenant-a"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
			"a ResourceQuota": &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "tenant-a"}},
			"a NetworkPolicy": &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "tenant-a"}},
		}
		for name, obj := range theirs {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			annotate := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"x":"y"}}}`))
			if err := op.Patch(ctx, obj, annotate, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "changes and deletes only objects labelled app.kubernetes.io/managed-by=kubectl-sched") {
				t.Errorf("patching %s: err = %v, want forbidden", name, err)
			}
			// Re-parenting it to an owner that does not exist, for the
			// garbage collector to delete.
			reparent := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"0b4a2e8c-0000-4000-8000-00000000dead"}]}}`))
			if err := op.Patch(ctx, obj, reparent, client.DryRunAll); !apierrors.IsForbidden(err) {
				t.Errorf("re-parenting %s: err = %v, want forbidden", name, err)
			}
			if err := op.Delete(ctx, obj, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "changes and deletes only objects labelled") {
				t.Errorf("deleting %s: err = %v, want forbidden", name, err)
			}
		}
		unlabelled := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "tenant-a"}}
		if err := op.Create(ctx, unlabelled, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "creates only objects it labels app.kubernetes.io/managed-by=kubectl-sched") {
			t.Errorf("creating an unlabelled ConfigMap: err = %v, want forbidden", err)
		}
	})
	t.Run("allowed: its own objects", func(t *testing.T) {
		ours := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ours", Namespace: "tenant-a", Labels: managed()}}
		if err := op.Create(ctx, ours); err != nil {
			t.Fatalf("creating a labelled ConfigMap: %v", err)
		}
		if err := op.Patch(ctx, ours, client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"v"}}`))); err != nil {
			t.Errorf("patching it: %v", err)
		}
		// An app's object whose label someone removed: controlled by the
		// app, so the operator may repair or delete it.
		app := &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "tenant-a"},
			Spec: schedv1.UserDeploymentSpec{Services: []schedv1.ServiceSpec{{Name: "web", Image: "busybox", Exposure: schedv1.ExposureNone}}}}
		if err := env.Client.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		unlabelled := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-config", Namespace: "tenant-a",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(app, schedv1.GroupVersion.WithKind("UserDeployment"))}}}
		if err := env.Client.Create(ctx, unlabelled); err != nil {
			t.Fatal(err)
		}
		if err := op.Patch(ctx, unlabelled, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"kubectl-sched"}}}`))); err != nil {
			t.Errorf("relabelling an app's object: %v", err)
		}
		if err := op.Delete(ctx, ours); err != nil {
			t.Errorf("deleting its ConfigMap: %v", err)
		}
	})
}

func authorizationAttrs(verb, group, resource, ns string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns}
}
