package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

const reservedMsg = "reserved for the kubectl-sched operator"

// editRole stands in for the built-in edit role, whose rules the
// aggregation controller of kube-controller-manager fills in (envtest runs
// none): what edit grants on the kinds these tests create, and writing
// ControllerRevisions, which edit does not grant but a namespace's admin
// may be given.
var editRole = &rbacv1.ClusterRole{
	ObjectMeta: metav1.ObjectMeta{Name: "test-edit"},
	Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "services", "configmaps", "secrets", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "replicasets", "controllerrevisions"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses", "networkpolicies"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
	},
}

// editor is a namespace user with edit (editRole) and kubectl-sched-edit,
// who may create pods, workloads, ConfigMaps and Secrets.
func editor(t *testing.T, namespace, user string) client.Client {
	t.Helper()
	_ = tenant(t, namespace, user, nil)
	return bindEdit(t, namespace, user)
}

func bindEdit(t *testing.T, namespace, user string) client.Client {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, editRole.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	c, err := testenv.BindUser(ctx, env.Client, env.Config, namespace, user, editRole.Name,
		authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}, RestartPolicy: corev1.RestartPolicyNever},
	}
}

// TestTenantCannotSetTheOperatorsLabels: the operator's caches select on
// app.kubernetes.io/managed-by=kubectl-sched, and sched.kubectl-sched.dev/
// labels tie an object to an app, task or workflow step. A namespace user
// may set neither, on any kind the operator caches or creates, nor in a
// template the built-in controllers copy into pods, nor ask the operator
// to stamp them on its pods through podMetadata.
func TestTenantCannotSetTheOperatorsLabels(t *testing.T) {
	const tns = "tenant-kim"
	kim := editor(t, tns, "kim")
	managed := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}
	task := map[string]string{schedv1.LabelAgentTask: "victim"}
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: tns, Labels: labels}
	}
	cases := map[string]struct {
		obj       client.Object
		wantField string
	}{
		"a ConfigMap the operator would cache": {
			obj:       &corev1.ConfigMap{ObjectMeta: meta("cm", managed)},
			wantField: "metadata.labels[app.kubernetes.io/managed-by]",
		},
		"a Secret claiming an app": {
			obj:       &corev1.Secret{ObjectMeta: meta("s", map[string]string{schedv1.LabelUserDeployment: "shop"})},
			wantField: "metadata.labels[sched.kubectl-sched.dev/userdeployment]",
		},
		"a pod posing as a task's": {
			obj:       &corev1.Pod{ObjectMeta: meta("p", task), Spec: podTemplate(nil).Spec},
			wantField: "metadata.labels[sched.kubectl-sched.dev/agenttask]",
		},
		"a Service": {
			obj:       &corev1.Service{ObjectMeta: meta("svc", managed), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
			wantField: "metadata.labels[app.kubernetes.io/managed-by]",
		},
		"a Deployment whose pods would carry it": {
			obj: &appsv1.Deployment{ObjectMeta: meta("d", nil), Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: managed},
				Template: func() corev1.PodTemplateSpec {
					p := podTemplate(managed)
					p.Spec.RestartPolicy = corev1.RestartPolicyAlways
					return p
				}(),
			}},
			wantField: "spec.template.metadata.labels[app.kubernetes.io/managed-by]",
		},
		"a Job": {
			obj:       &batchv1.Job{ObjectMeta: meta("j", nil), Spec: batchv1.JobSpec{Template: podTemplate(task)}},
			wantField: "spec.template.metadata.labels[sched.kubectl-sched.dev/agenttask]",
		},
		"a CronJob's jobs": {
			obj: &batchv1.CronJob{ObjectMeta: meta("cj", nil), Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{
				Spec: batchv1.JobSpec{Template: podTemplate(task)}}}},
			wantField: "spec.jobTemplate.spec.template.metadata.labels[sched.kubectl-sched.dev/agenttask]",
		},
		"a StatefulSet's claims": {
			obj: &appsv1.StatefulSet{ObjectMeta: meta("ss", nil), Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ss"}},
				Template: func() corev1.PodTemplateSpec {
					p := podTemplate(map[string]string{"app": "ss"})
					p.Spec.RestartPolicy = corev1.RestartPolicyAlways
					return p
				}(),
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: managed},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
			}},
			wantField: "spec.volumeClaimTemplates[data].metadata.labels[app.kubernetes.io/managed-by]",
		},
		"a NetworkPolicy": {
			obj:       &networkingv1.NetworkPolicy{ObjectMeta: meta("np", managed)},
			wantField: "metadata.labels[app.kubernetes.io/managed-by]",
		},
		"a ControllerRevision posing as an app's revision": {
			obj: &appsv1.ControllerRevision{ObjectMeta: meta("shop.v2", map[string]string{schedv1.LabelUserDeployment: "shop", schedv1.LabelRevisionHash: "0123456789abcdef"}),
				Revision: 2, Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}},
			wantField: "metadata.labels[sched.kubectl-sched.dev/revision-hash]",
		},
		"an AgentTask posing as a workflow's step": {
			obj:       MakeAgentTask("t", tns).Image("busybox").Obj(),
			wantField: "metadata.labels[sched.kubectl-sched.dev/workflow]",
		},
		// A cached step result other steps with its key would take.
		"an AgentTask posing as a cached step result": {
			obj:       MakeAgentTask("t", tns).Image("busybox").Obj(),
			wantField: "metadata.labels[sched.kubectl-sched.dev/cache-key]",
		},
	}
	cases["a CronWorkflow marked as the operator's"] = struct {
		obj       client.Object
		wantField string
	}{MakeCronWorkflow("c", tns, "@daily").Step("a", "busybox").Obj(), "metadata.labels[app.kubernetes.io/managed-by]"}
	cases["a CronWorkflow marked as the operator's"].obj.SetLabels(managed)
	cases["an AgentTask posing as a workflow's step"].obj.SetLabels(map[string]string{schedv1.LabelWorkflow: "victim", schedv1.LabelWorkflowStep: "0"})
	cases["an AgentTask posing as a cached step result"].obj.SetLabels(map[string]string{schedv1.LabelCacheKey: schedv1.CacheKeyHash("build:abc123")})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := kim.Create(context.Background(), tc.obj, client.DryRunAll)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantField) || !strings.Contains(err.Error(), reservedMsg) {
				t.Errorf("err = %v; want it forbidden, naming %s", err, tc.wantField)
			}
		})
	}

	// Through podMetadata the operator would stamp them itself.
	for name, obj := range map[string]client.Object{
		"a task's podMetadata": MakeAgentTask("t", tns).Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) {
			s.PodMetadata = &schedv1.PodMetadata{Labels: map[string]string{schedv1.LabelManagedBy: "someone-else"}}
		}).Obj(),
		"a workflow step's podMetadata": MakeWorkflow("w", tns).StepTask("a", schedv1.AgentTaskSpec{Image: "busybox",
			PodMetadata: &schedv1.PodMetadata{Labels: map[string]string{schedv1.LabelAgentTask: "victim"}}}).Obj(),
		"a scheduled step's podMetadata": MakeCronWorkflow("c", tns, "@daily").StepTask("a", schedv1.AgentTaskSpec{Image: "busybox",
			PodMetadata: &schedv1.PodMetadata{Labels: map[string]string{schedv1.LabelAgentTask: "victim"}}}).Obj(),
		"a service's podMetadata": MakeUserDeployment("u", tns).Service("web", "nginx", 80, schedv1.ExposureInternal).
			EditService("web", func(s *schedv1.ServiceSpec) {
				s.PodMetadata = &schedv1.PodMetadata{Labels: map[string]string{schedv1.LabelUserDeployment: "victim"}}
			}).Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			err := kim.Create(context.Background(), obj, client.DryRunAll)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "podMetadata.labels") || !strings.Contains(err.Error(), "the operator's own labels") {
				t.Errorf("err = %v; want it invalid, naming podMetadata.labels", err)
			}
		})
	}

	// Another tool's managed-by, and labels of our domain that are not the
	// operator's prefix, stay the user's.
	for _, labels := range []map[string]string{{schedv1.LabelManagedBy: "helm"}, {"kubectl-sched.dev/template": "true"}} {
		if err := kim.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: meta("ok", labels)}, client.DryRunAll); err != nil {
			t.Errorf("ConfigMap labelled %v refused: %v", labels, err)
		}
	}
}

// TestTenantCannotAddTheOperatorsLabelsLater: an update may not add or
// change them either, but may leave them as they are, so a tenant (or the
// garbage collector) can still edit an object the operator made.
func TestTenantCannotAddTheOperatorsLabelsLater(t *testing.T) {
	const tns = "tenant-lee"
	lee := editor(t, tns, "lee")
	ctx := context.Background()
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: tns}}
	if err := lee.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	plain.Labels = map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}
	if err := lee.Update(ctx, plain); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), reservedMsg) {
		t.Errorf("adding managed-by by update: err = %v, want forbidden", err)
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+schedv1.LabelService+`":"web"}}}`))
	if err := lee.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: tns}}, patch); !apierrors.IsForbidden(err) {
		t.Errorf("adding a sched label by patch: err = %v, want forbidden", err)
	}

	// As the operator would have made it (the admin stands in for it here).
	ours := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ours", Namespace: tns,
		Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelUserDeployment: "shop"}}}
	if err := env.Client.Create(ctx, ours); err != nil {
		t.Fatal(err)
	}
	if err := lee.Get(ctx, client.ObjectKeyFromObject(ours), ours); err != nil {
		t.Fatal(err)
	}
	ours.Data = map[string]string{"edited": "by the tenant"}
	ours.Labels["team"] = "a"
	if err := lee.Update(ctx, ours); err != nil {
		t.Errorf("editing an operator's object, its labels kept: %v", err)
	}
	ours.Labels[schedv1.LabelUserDeployment] = "other-app"
	if err := lee.Update(ctx, ours); !apierrors.IsForbidden(err) {
		t.Errorf("moving an operator's object to another app: err = %v, want forbidden", err)
	}
}

// TestOnlyTheOperatorAndTheCopyingControllersSetThem: the operator's exact
// account, and the built-in controllers that copy a template's labels into
// the pods, ReplicaSets and claims they make, may set them; an account
// that only shares the operator's name, in a tenant's namespace, may not.
func TestOnlyTheOperatorAndTheCopyingControllersSetThem(t *testing.T) {
	const tns = "tenant-max"
	_ = editor(t, tns, "max")
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: tns, Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelAgentTask: "t"}},
		Spec:       podTemplate(nil).Spec,
	}
	// Restricted, as the operator's own templates are: the confinement
	// policy refuses it any other pod.
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	as := func(user string) client.Client { return bindEdit(t, tns, user) }
	for _, user := range []string{
		"system:serviceaccount:" + schedv1.DefaultOperatorNamespace + ":" + schedv1.OperatorServiceAccount,
		"system:kube-controller-manager",
		"system:serviceaccount:kube-system:job-controller",
		"system:serviceaccount:kube-system:replicaset-controller",
	} {
		if err := as(user).Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("%s: %v", user, err)
		}
	}
	// A tenant who may impersonate the service accounts of their namespace
	// (edit may) names one like the operator's.
	lookalike := "system:serviceaccount:" + tns + ":" + schedv1.OperatorServiceAccount
	if err := as(lookalike).Create(ctx, pod.DeepCopy(), client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), reservedMsg) {
		t.Errorf("%s: err = %v, want forbidden", lookalike, err)
	}
}
