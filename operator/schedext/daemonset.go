package schedext

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Containers of a scheduler pod.
const (
	// ContainerPreflight checks the kernel before the loader starts.
	ContainerPreflight = "preflight"
	// ContainerScheduler runs the sched_ext loader.
	ContainerScheduler = "scheduler"
	// ContainerAttachCheck carries the readiness probe that says whether
	// the kernel has the expected scheduler attached.
	ContainerAttachCheck = "attach-check"
)

// ExitUnsupported is the preflight's exit code on a kernel without
// sched_ext (EX_CONFIG from sysexits.h); the controller looks for it.
const ExitUnsupported = 78

// AnnotationTemplateHash on the DaemonSet is a hash of what the controller
// last wrote, so a change in the SchedExt or in arbitration is seen even
// where comparing with the server-defaulted object cannot see it (a removed
// node exclusion, a removed nodeSelector key).
const AnnotationTemplateHash = schedv1.GroupName + "/template-hash"

// EnvExpectedOps tells the attach check which ops name to expect.
const EnvExpectedOps = "SCX_EXPECTED_OPS"

// hostSysKernel is where the helper containers see the host's /sys/kernel.
const hostSysKernel = "/host/sys/kernel"

// preflightScript fails with ExitUnsupported and a termination message when
// the kernel cannot run a sched_ext scheduler, so the node is reported as
// unsupported instead of the loader crash-looping without explanation.
const preflightScript = `k=` + hostSysKernel + `
if [ ! -d "$k/sched_ext" ]; then
  echo "sched_ext not supported by this kernel: /sys/kernel/sched_ext is absent (needs Linux 6.12+ with CONFIG_SCHED_CLASS_EXT)" >/dev/termination-log
  exit 78
fi
if [ ! -e "$k/btf/vmlinux" ]; then
  echo "sched_ext not supported by this kernel: /sys/kernel/btf/vmlinux is absent (needs CONFIG_DEBUG_INFO_BTF)" >/dev/termination-log
  exit 78
fi
`

// attachProbeScript passes only while the kernel reports a scheduler
// attached whose ops name starts with $SCX_EXPECTED_OPS (any, when empty).
const attachProbeScript = `d=` + hostSysKernel + `/sched_ext
[ "$(cat "$d/state" 2>/dev/null)" = enabled ] || exit 1
ops=$(cat "$d/root/ops" 2>/dev/null) || exit 1
case "$ops" in "$SCX_EXPECTED_OPS"*) exit 0 ;; esac
exit 1
`

// idleScript keeps the attach-check container alive and exits at once on
// SIGTERM, so it never holds up the pod's termination.
const idleScript = `trap 'exit 0' TERM
while :; do sleep 3600 & wait $!; done
`

// buildInput is what the DaemonSet needs besides the SchedExt.
type buildInput struct {
	Namespace   string
	Image       string
	HelperImage string
	// Exclude are nodes that older SchedExts keep.
	Exclude []string
}

// ResolveImage returns the image that runs scx's scheduler: the SchedExt's
// own image when it names one (with or without a well-known name), else the
// operator's image for the name; false when there is none.
func ResolveImage(spec schedv1.SchedulerSource, images map[string]string) (string, bool) {
	if spec.Image != "" {
		return spec.Image, true
	}
	img, ok := images[spec.Name]
	return img, ok && img != ""
}

// ExpectedOps is the prefix of /sys/kernel/sched_ext/root/ops that means
// scx's scheduler is attached: the name without "scx_" for a well-known
// scheduler (scx_rusty attaches "rusty_..."), opsName for an image, or ""
// (any scheduler) for an image without one.
func ExpectedOps(spec schedv1.SchedulerSource) string {
	if spec.Name != "" {
		return strings.TrimPrefix(spec.Name, "scx_")
	}
	return spec.OpsName
}

// buildDaemonSet is the DaemonSet that runs scx's scheduler on the nodes
// arbitration gave it. It is pure; the caller sets the owner reference.
func buildDaemonSet(scx *schedv1.SchedExt, in buildInput) *appsv1.DaemonSet {
	selector := map[string]string{schedv1.LabelSchedExt: scx.Name}
	ownLabels := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelSchedExt: scx.Name}

	podLabels, podAnnotations := map[string]string{}, map[string]string(nil)
	if pm := scx.Spec.PodMetadata; pm != nil {
		maps.Copy(podLabels, pm.Labels)
		if len(pm.Annotations) > 0 {
			podAnnotations = maps.Clone(pm.Annotations)
		}
	}
	// Ours last: the selector and the operator's cache depend on them.
	maps.Copy(podLabels, ownLabels)
	// The scheduler this pod's attach check looks for: while it is Ready,
	// its node is labelled with it (nodelabel.go). None when the check
	// takes any scheduler.
	delete(podLabels, schedv1.LabelCPUScheduler)
	if v := scx.Spec.Scheduler.CPUScheduler(); v != "" {
		podLabels[schedv1.LabelCPUScheduler] = v
	}

	ds := &appsv1.DaemonSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      names.DaemonSet(scx.Name),
			Namespace: in.Namespace,
			Labels:    maps.Clone(ownLabels),
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// Never two loaders on one node: replace a pod only after the
			// old one is gone (maxSurge 0), one node at a time.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec:       podSpec(scx, in),
			},
		},
	}
	ds.Annotations = map[string]string{AnnotationTemplateHash: templateHash(ds)}
	return ds
}

func podSpec(scx *schedv1.SchedExt, in buildInput) corev1.PodSpec {
	spec := corev1.PodSpec{
		// Userspace-side schedulers (scx_rustland, scx_layered) look tasks up
		// by the kernel's PIDs in /proc.
		HostPID: true,
		// The loader does not talk to the API server.
		AutomountServiceAccountToken: ptr.To(false),
		// Time for the loader to detach cleanly on SIGTERM; the kernel falls
		// back to the fair class when it exits.
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		NodeSelector:                  maps.Clone(scx.Spec.NodeSelector),
		Tolerations:                   slices.Clone(scx.Spec.Tolerations),
		ImagePullSecrets:              slices.Clone(scx.Spec.ImagePullSecrets),
		InitContainers:                []corev1.Container{preflightContainer(in.HelperImage)},
		Containers: []corev1.Container{
			schedulerContainer(scx, in.Image),
			attachCheckContainer(in.HelperImage, ExpectedOps(scx.Spec.Scheduler)),
		},
		Volumes: []corev1.Volume{
			hostPathVolume("sys-kernel", "/sys/kernel"),
			hostPathVolume("bpffs", "/sys/fs/bpf"),
		},
	}
	if len(in.Exclude) > 0 {
		// By node name (metadata.name), not the hostname label, which can
		// differ from it. The DaemonSet controller evaluates this against
		// the template to decide where pods run. A field requirement takes
		// one value, so one NotIn per node, ANDed in a single term.
		excluded := slices.Clone(in.Exclude)
		slices.Sort(excluded)
		term := corev1.NodeSelectorTerm{MatchFields: make([]corev1.NodeSelectorRequirement, 0, len(excluded))}
		for _, n := range excluded {
			term.MatchFields = append(term.MatchFields, corev1.NodeSelectorRequirement{
				Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpNotIn, Values: []string{n},
			})
		}
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}},
		}}
	}
	return spec
}

func schedulerContainer(scx *schedv1.SchedExt, image string) corev1.Container {
	c := corev1.Container{
		Name:      ContainerScheduler,
		Image:     image,
		Args:      slices.Clone(scx.Spec.Args),
		Env:       envVars(scx.Spec.Env),
		Resources: scx.Spec.Resources.Core(),
		// Loading BPF struct_ops needs CAP_BPF, CAP_SYS_ADMIN and
		// CAP_PERFMON, and bpf() and perf_event_open() must also get past
		// the runtime's seccomp and AppArmor profiles, which differ between
		// runtimes; privileged is the one setting that works on all of them.
		SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "bpffs", MountPath: "/sys/fs/bpf", MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if scx.Spec.Scheduler.Name != "" {
		// A well-known scheduler's image may hold several schedulers (the
		// scx image holds them all), so run the one named.
		c.Command = []string{scx.Spec.Scheduler.Name}
	}
	return c
}

func preflightContainer(image string) corev1.Container {
	return corev1.Container{
		Name:            ContainerPreflight,
		Image:           image,
		Command:         []string{"sh", "-c", preflightScript},
		Resources:       helperResources(),
		SecurityContext: helperSecurityContext(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "sys-kernel", MountPath: hostSysKernel, ReadOnly: true}},
	}
}

func attachCheckContainer(image, expectedOps string) corev1.Container {
	return corev1.Container{
		Name:    ContainerAttachCheck,
		Image:   image,
		Command: []string{"sh", "-c", idleScript},
		Env:     []corev1.EnvVar{{Name: EnvExpectedOps, Value: expectedOps}},
		// Every field set: the controller compares this with the
		// server-defaulted DaemonSet to find edits made out of band.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", attachProbeScript}}},
			PeriodSeconds:    5,
			TimeoutSeconds:   2,
			SuccessThreshold: 1,
			FailureThreshold: 2,
		},
		Resources:       helperResources(),
		SecurityContext: helperSecurityContext(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "sys-kernel", MountPath: hostSysKernel, ReadOnly: true}},
	}
}

// helperSecurityContext: the helpers only read world-readable files.
func helperSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](65534),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func helperResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")},
	}
}

func hostPathVolume(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
	}}
}

func envVars(in []schedv1.EnvVar) []corev1.EnvVar {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.EnvVar, 0, len(in))
	for _, e := range in {
		out = append(out, corev1.EnvVar{Name: e.Name, Value: e.Value, ValueFrom: e.ValueFrom.DeepCopy()})
	}
	return out
}

// templateHash hashes the parts of ds the controller decides.
func templateHash(ds *appsv1.DaemonSet) string {
	data, err := json.Marshal(struct {
		Labels map[string]string
		Spec   appsv1.DaemonSetSpec
	}{ds.Labels, ds.Spec})
	if err != nil {
		// Marshalling API types cannot fail.
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
