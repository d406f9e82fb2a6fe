package userdeployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestInSync checks drift detection against what the API server stores:
// the desired Deployment plus defaults, status and a revision annotation.
func TestInSync(t *testing.T) {
	ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Replicas("api", 2).
		EditService("api", func(s *schedv1.ServiceSpec) {
			s.Args = []string{"serve"}
			s.Env = []schedv1.EnvVar{{Name: "LOG", Value: "debug"}}
		}).
		Placement(schedv1.Placement{Spot: schedv1.SpotAllowed}).Obj()
	desired := buildPlan(ud, testSettings, apis{}).deployments["api"]
	form, err := applyForm(desired)
	if err != nil {
		t.Fatal(err)
	}
	// stored is desired after a round trip through the API server.
	stored := func() *appsv1.Deployment {
		d := desired.DeepCopy()
		d.TypeMeta = metav1.TypeMeta{}
		d.ResourceVersion, d.Generation, d.UID = "42", 3, "dep-uid"
		d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1", annotationApplied: form.GetAnnotations()[annotationApplied]}
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
		}}
		pod := &d.Spec.Template.Spec
		pod.RestartPolicy, pod.DNSPolicy, pod.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, corev1.DefaultSchedulerName
		pod.TerminationGracePeriodSeconds = ptr.To[int64](30)
		c := &pod.Containers[0]
		c.ImagePullPolicy, c.TerminationMessagePath = corev1.PullIfNotPresent, corev1.TerminationMessagePathDefault
		d.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 2, ObservedGeneration: 3}
		return d
	}

	cases := map[string]struct {
		edit func(*appsv1.Deployment)
		in   bool
	}{
		"as stored, with defaults": {in: true},
		"replicas scaled by hand":  {edit: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }},
		"image changed":            {edit: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "api:2" }},
		"a label removed":          {edit: func(d *appsv1.Deployment) { delete(d.Labels, schedv1.LabelManagedBy) }},
		"an env var changed":       {edit: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[0].Value = "info" }},
		"an env var removed":       {edit: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env = nil }},
		// Env is keyed by name: apply would keep someone else's variable.
		"someone else's env var": {in: true, edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "X", Value: "1"})
		}},
		// Tolerations are atomic: apply replaces the whole list.
		"a toleration added": {edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations, corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists})
		}},
		"args changed": {edit: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Args = append(d.Spec.Template.Spec.Containers[0].Args, "--debug")
		}},
		"applied by an older plan": {edit: func(d *appsv1.Deployment) { d.Annotations[annotationApplied] = "0123456789abcdef" }},
		"someone else's label":     {edit: func(d *appsv1.Deployment) { d.Labels["team"] = "pay" }, in: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			actual := stored()
			if tc.edit != nil {
				tc.edit(actual)
			}
			got, err := inSync(form, actual)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.in {
				t.Errorf("inSync = %v, want %v", got, tc.in)
			}
		})
	}
}

// TestAppliedDigestSeesRemovedFields: a field the spec stops setting is
// still on the object, so only the digest tells the plan changed.
func TestAppliedDigestSeesRemovedFields(t *testing.T) {
	with := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).
		EditService("api", func(s *schedv1.ServiceSpec) { s.Env = []schedv1.EnvVar{{Name: "DEBUG", Value: "1"}} }).Obj()
	without := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
	old, err := applyForm(buildPlan(with, testSettings, apis{}).deployments["api"])
	if err != nil {
		t.Fatal(err)
	}
	next, err := applyForm(buildPlan(without, testSettings, apis{}).deployments["api"])
	if err != nil {
		t.Fatal(err)
	}
	in, err := inSync(next, old)
	if err != nil {
		t.Fatal(err)
	}
	if in {
		t.Errorf("an object applied with DEBUG=1 is in sync with a plan without it")
	}
}

// TestInSyncOptionalKinds: ExternalSecrets and IngressRoutes have no schema
// here, so lists are compared whole (as a CRD without list annotations).
func TestInSyncOptionalKinds(t *testing.T) {
	ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
	form, err := applyForm(buildExternalSecret(ud, schedv1.SecretReference{Name: "db", External: &schedv1.ExternalSecretSource{Key: "prod/db"}}, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		edit func(map[string]any)
		in   bool
	}{
		"as applied, with status": {in: true, edit: func(o map[string]any) {
			o["status"] = map[string]any{"refreshTime": "2026-01-01T00:00:00Z"}
			o["spec"].(map[string]any)["refreshInterval"] = "1h"
		}},
		"store changed": {edit: func(o map[string]any) {
			o["spec"].(map[string]any)["secretStoreRef"].(map[string]any)["name"] = "other"
		}},
		"an extra key pulled": {edit: func(o map[string]any) {
			spec := o["spec"].(map[string]any)
			spec["dataFrom"] = append(spec["dataFrom"].([]any), map[string]any{"extract": map[string]any{"key": "prod/other"}})
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			actual := form.DeepCopy()
			actual.SetResourceVersion("7")
			tc.edit(actual.Object)
			got, err := inSync(form, actual)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.in {
				t.Errorf("inSync = %v, want %v", got, tc.in)
			}
		})
	}
}
