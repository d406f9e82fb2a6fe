package userdeployment

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

func TestBuildDeployment(t *testing.T) {
	ud := app().
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		Service("web", "web:1", 80, schedv1.ExposurePublic).
		Config("MODE", "fast").
		SecretRef("db", "shop-db").
		ExternalSecretRef("stripe", "prod/stripe", "api").
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Secrets[0].EnvPrefix = "DB_"
			s.Secrets = append(s.Secrets, schedv1.SecretReference{Name: "tls", SecretName: "web-cert", MountPath: "/etc/tls", Services: []string{"web"}})
			s.Placement = &schedv1.Placement{NodePools: []string{"highmem"}}
		}).
		EditService("api", func(s *schedv1.ServiceSpec) {
			s.Command = []string{"/api"}
			s.Args = []string{"--port=8080"}
			s.Ports[0].Name = "http"
			s.Env = []schedv1.EnvVar{{Name: "LOG", Value: "debug"}}
			s.PodMetadata = &schedv1.PodMetadata{
				Labels:      map[string]string{"team": "pay", schedv1.LabelService: "spoofed"},
				Annotations: map[string]string{"sim.kubectl-sched.dev/ready": "false"},
			}
		}).
		Replicas("api", 2).Obj()
	s := testSettings
	s.ClusterSecretStore = "vault"
	p := buildPlan(ud, s, apis{externalSecrets: true})

	podLabels := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "api", "team": "pay"}
	selector := map[string]string{schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "api"}
	want := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: wantMeta("shop-api", "api"),
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr.To[int32](2),
			ProgressDeadlineSeconds: ptr.To[int32](600),
			// The app keeps its revisions; no old ReplicaSets.
			RevisionHistoryLimit: ptr.To[int32](0),
			Selector:             &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels,
					Annotations: map[string]string{"sim.kubectl-sched.dev/ready": "false", annotationConfigHash: configHash(map[string]string{"MODE": "fast"})},
				},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:    "api",
						Image:   "api:1",
						Command: []string{"/api"},
						Args:    []string{"--port=8080"},
						Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
						EnvFrom: []corev1.EnvFromSource{
							{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-config"}}},
							{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-db"}}},
							{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-stripe"}}},
						},
						Env:                      []corev1.EnvVar{{Name: "LOG", Value: "debug"}},
						SecurityContext:          podsecurity.Container(nil),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					SecurityContext: podsecurity.Pod(),
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{
								{Key: schedv1.NodeLabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"highmem"}},
								{Key: schedv1.NodeLabelSpot, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"true"}},
							},
						}}},
					}},
					// Naming a pool tolerates the taint that may reserve it.
					Tolerations: []corev1.Toleration{{Key: schedv1.TaintPool, Operator: corev1.TolerationOpEqual, Value: "highmem", Effect: corev1.TaintEffectNoSchedule}},
				},
			},
		},
	}
	if diff := cmp.Diff(want, p.deployments["api"]); diff != "" {
		t.Errorf("api Deployment (-want +got):\n%s", diff)
	}

	web := p.deployments["web"].Spec.Template.Spec
	wantVolumes := []corev1.Volume{{Name: "secret-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-cert"}}}}
	if diff := cmp.Diff(wantVolumes, web.Volumes); diff != "" {
		t.Errorf("web volumes (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{{Name: "secret-tls", MountPath: "/etc/tls", ReadOnly: true}}
	if diff := cmp.Diff(wantMounts, web.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("web mounts (-want +got):\n%s", diff)
	}
	// web gets the config and the shared secret, not api's external one.
	if got := len(web.Containers[0].EnvFrom); got != 2 {
		t.Errorf("web has %d envFrom sources, want 2: %+v", got, web.Containers[0].EnvFrom)
	}
}

// TestDeploymentsGetTheAppsDeadline: the Deployments' own deadline is the
// app's, in whole seconds, so their Progressing condition agrees.
func TestDeploymentsGetTheAppsDeadline(t *testing.T) {
	for d, want := range map[time.Duration]int32{0: 600, 10 * time.Second: 10, 90*time.Second + time.Millisecond: 91, 24 * time.Hour: 86400} {
		ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
		if d > 0 {
			ud.Spec.ProgressDeadline = &metav1.Duration{Duration: d}
		}
		if got := buildPlan(ud, testSettings, apis{}).deployments["api"].Spec.ProgressDeadlineSeconds; got == nil || *got != want {
			t.Errorf("progressDeadline %v: progressDeadlineSeconds %v, want %d", d, got, want)
		}
	}
}

// TestSecretHashReachesServicesWithSecrets: only the pods that receive a
// secret roll when its values change.
func TestSecretHashReachesServicesWithSecrets(t *testing.T) {
	ud := app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("db", "db:1", 5432, schedv1.ExposureInternal).
		Meta(func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{schedv1.AnnotationSecretHash: "abc"} }).
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Secrets = []schedv1.SecretReference{{Name: "params", SecretName: "shop-secrets", Services: []string{"db"}}}
		}).Obj()
	p := buildPlan(ud, testSettings, apis{})
	got := map[string]string{}
	for name, dep := range p.deployments {
		got[name] = dep.Spec.Template.Annotations[schedv1.AnnotationSecretHash]
	}
	if diff := cmp.Diff(map[string]string{"web": "", "db": "abc"}, got); diff != "" {
		t.Errorf("secret hash per service (-want +got):\n%s", diff)
	}
}

// TestRestartedAtRollsOnlyItsService: spec.restartedAt reaches the pod
// template of the service it names, as kubectl rollout restart's annotation.
func TestRestartedAtRollsOnlyItsService(t *testing.T) {
	ud := app().Service("web", "web:1", 80, schedv1.ExposureInternal).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		Spec(func(s *schedv1.UserDeploymentSpec) { s.RestartedAt = map[string]string{"api": "2026-11-24T20:00:00Z"} }).Obj()
	p := buildPlan(ud, testSettings, apis{})
	if got := p.deployments["api"].Spec.Template.Annotations[annotationRestartedAt]; got != "2026-11-24T20:00:00Z" {
		t.Errorf("api pod template restartedAt %q", got)
	}
	if got, ok := p.deployments["web"].Spec.Template.Annotations[annotationRestartedAt]; ok {
		t.Errorf("web pod template restartedAt %q, want none", got)
	}
}

// TestBuildStatefulSet: a service with volumes runs as a StatefulSet with a
// claim per volume, mounted, and claims kept on scale-down and deletion.
func TestBuildStatefulSet(t *testing.T) {
	ud := app().Service("db", "postgres:17", 5432, schedv1.ExposureInternal).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		EditService("db", func(s *schedv1.ServiceSpec) {
			s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("10Gi"), MountPath: "/var/lib/postgresql", StorageClass: "fast"}}
			s.ServiceAccountName = "db-runner"
			s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		}).Obj()
	p := buildPlan(ud, testSettings, apis{})
	var sts *appsv1.StatefulSet
	var kinds []string
	for _, o := range p.objects {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
		if s, ok := o.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	if diff := cmp.Diff([]string{"StatefulSet/shop-db", "Service/shop-db", "Deployment/shop-api", "Service/shop-api", "NetworkPolicy/shop"}, kinds); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	claim := sts.Spec.VolumeClaimTemplates[0]
	if claim.Name != "data" || ptr.Deref(claim.Spec.StorageClassName, "") != "fast" || claim.Spec.Resources.Requests.Storage().String() != "10Gi" ||
		!cmp.Equal(claim.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim template %+v", claim)
	}
	pod := sts.Spec.Template.Spec
	if diff := cmp.Diff([]corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql"}}, pod.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if pod.ServiceAccountName != "db-runner" || !cmp.Equal(pod.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "registry"}}) {
		t.Errorf("serviceAccountName %q, imagePullSecrets %v", pod.ServiceAccountName, pod.ImagePullSecrets)
	}
	keep := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if r := sts.Spec.PersistentVolumeClaimRetentionPolicy; r == nil || r.WhenScaled != keep || r.WhenDeleted != keep {
		t.Errorf("claim retention %+v, want Retain on scale-down and deletion", r)
	}
	if sts.Spec.ServiceName != "shop-db" || !metav1.IsControlledBy(sts, ud) || *sts.Spec.Replicas != 1 {
		t.Errorf("serviceName %q, owners %v, replicas %d", sts.Spec.ServiceName, sts.OwnerReferences, *sts.Spec.Replicas)
	}
	// The status sees its replicas as a Deployment's.
	if p.deployments["db"] == nil || *p.deployments["db"].Spec.Replicas != 1 {
		t.Errorf("status view %+v", p.deployments["db"])
	}
	if api := p.deployments["api"].Spec.Template.Spec; api.ServiceAccountName != "" || api.ImagePullSecrets != nil {
		t.Errorf("api got db's service account or pull secrets: %+v", api)
	}
}
