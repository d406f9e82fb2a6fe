package userdeployment

import (
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/placement"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// annotationRestartedAt is the pod template annotation kubectl rollout
// restart sets; spec.restartedAt sets it per service.
const annotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

func buildDeployment(ud *schedv1.UserDeployment, svc *schedv1.ServiceSpec, replicas int32, priorityClasses map[string]string) *appsv1.Deployment {
	podLabels, podAnnotations := map[string]string{}, map[string]string{}
	if svc.PodMetadata != nil {
		maps.Copy(podLabels, svc.PodMetadata.Labels)
		maps.Copy(podAnnotations, svc.PodMetadata.Annotations)
	}
	// Ours win: the managed-by label keeps the pods in the operator's cache.
	maps.Copy(podLabels, objectLabels(ud, svc.Name))
	if len(ud.Spec.Config) > 0 {
		podAnnotations[annotationConfigHash] = configHash(ud.Spec.Config)
	}
	if h := ud.Annotations[schedv1.AnnotationSecretHash]; h != "" && receivesSecrets(ud, svc.Name) {
		podAnnotations[schedv1.AnnotationSecretHash] = h
	}
	if at := ud.Spec.RestartedAt[svc.Name]; at != "" {
		// kubectl rollout restart's annotation: a new value rolls the pods.
		podAnnotations[annotationRestartedAt] = at
	}
	if len(podAnnotations) == 0 {
		podAnnotations = nil
	}

	c := corev1.Container{
		Name:            svc.Name,
		Image:           svc.Image,
		Command:         svc.Command,
		Args:            svc.Args,
		Resources:       svc.Resources.Core(),
		ReadinessProbe:  svc.ReadinessProbe.Core(),
		LivenessProbe:   svc.LivenessProbe.Core(),
		SecurityContext: podsecurity.Container(svc.SecurityContext.Core()),
		// A container that crashes without writing /dev/termination-log
		// leaves the end of its log there instead, and the app's status
		// shows it (podstatus.Cause).
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	for _, p := range svc.Ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: protocol(p)})
	}
	if len(ud.Spec.Config) > 0 {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: names.ConfigMap(ud.Name)}},
		})
	}
	var volumes []corev1.Volume
	for _, ref := range ud.Spec.Secrets {
		if !slices.Contains(servicesOf(ud, ref), svc.Name) {
			continue
		}
		secret := ref.SecretName
		if ref.External != nil {
			secret = names.ExternalSecret(ud.Name, ref.Name)
		}
		if ref.MountPath != "" {
			vol := "secret-" + ref.Name
			volumes = append(volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: ref.MountPath, ReadOnly: true})
			continue
		}
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{
			Prefix:    ref.EnvPrefix,
			SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}},
		})
	}
	for _, e := range svc.Env {
		c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, Value: e.Value, ValueFrom: e.ValueFrom})
	}

	spec := corev1.PodSpec{
		Containers:         []corev1.Container{c},
		Volumes:            volumes,
		ServiceAccountName: svc.ServiceAccountName,
		ImagePullSecrets:   svc.ImagePullSecrets,
		SecurityContext:    podsecurity.Pod(),
	}
	selector := selectorLabels(ud, svc.Name)
	placement.Apply(&spec, ud.Spec.Placement, selector, priorityClasses)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: objectMeta(ud, names.ServiceObject(ud.Name, svc.Name), svc.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			// The app keeps its own revisions (ControllerRevisions, bounded
			// by its tier): a Deployment's old ReplicaSets, ten by default,
			// would be as many more copies of the pod template.
			RevisionHistoryLimit: ptr.To[int32](0),
			// The app's deadline, so the Deployment's own Progressing
			// condition agrees with the app's.
			ProgressDeadlineSeconds: ptr.To(deadlineSeconds(ud.Spec.Deadline())),
			Selector:                &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec:       spec,
			},
		},
	}
}

// deadlineSeconds is d in whole seconds, rounded up.
func deadlineSeconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

// statefulSetOf runs a service with volumes: the Deployment's pod template
// with a claim per volume and replica. A StatefulSet rather than a
// Deployment with one claim: each replica gets its own volume, and a
// rollout never waits on a ReadWriteOnce volume still attached to the pod
// it replaces. Pods start and stop in parallel, as a Deployment's do, and
// the claims are kept when the service scales to zero (stop) or the app is
// deleted.
func statefulSetOf(ud *schedv1.UserDeployment, svc *schedv1.ServiceSpec, dep *appsv1.Deployment) *appsv1.StatefulSet {
	tmpl := *dep.Spec.Template.DeepCopy()
	var claims []corev1.PersistentVolumeClaim
	for _, v := range svc.Volumes {
		claim := corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: v.Name, Labels: objectLabels(ud, svc.Name)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: v.Size}},
			},
		}
		if v.StorageClass != "" {
			claim.Spec.StorageClassName = ptr.To(v.StorageClass)
		}
		claims = append(claims, claim)
		tmpl.Spec.Containers[0].VolumeMounts = append(tmpl.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: v.MountPath})
	}
	// The non-root default user can write its volumes.
	tmpl.Spec.SecurityContext.FSGroup = ptr.To[int64](podsecurity.NonRootUID)
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: dep.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:             dep.Spec.Replicas,
			Selector:             dep.Spec.Selector,
			ServiceName:          dep.Name,
			Template:             tmpl,
			VolumeClaimTemplates: claims,
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			// As a Deployment's: the app keeps its own revisions.
			RevisionHistoryLimit: ptr.To[int32](0),
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

// statefulSetView shows a StatefulSet as the Deployment fields the status
// reads (replicas wanted, observed, updated, ready, available), which mean
// the same for both.
func statefulSetView(sts *appsv1.StatefulSet) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: sts.ObjectMeta,
		Spec:       appsv1.DeploymentSpec{Replicas: sts.Spec.Replicas},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: sts.Status.ObservedGeneration,
			Replicas:           sts.Status.Replicas,
			UpdatedReplicas:    sts.Status.UpdatedReplicas,
			ReadyReplicas:      sts.Status.ReadyReplicas,
			AvailableReplicas:  sts.Status.AvailableReplicas,
		},
	}
}
