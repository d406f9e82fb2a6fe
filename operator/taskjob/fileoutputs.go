package taskjob

import (
	"context"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/fileoutputs"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// The pod side of a task's file outputs (spec.outputs.fromDir): the
// directory the task's container writes its files into, and the native
// sidecar of the tools image that writes them to its log once the
// container has ended. The operator reads that log back (agenttask's
// fileoutputs.go); the frame and its bounds are operator/fileoutputs'.

const (
	// OutputsContainerName is the sidecar that hands the files over.
	OutputsContainerName = "outputs"
	// outputsVolume is the emptyDir the files are written into.
	outputsVolume = "kubectl-sched-outputs"
	// outputsMount is where the sidecar reads them.
	outputsMount = "/kubectl-sched/outputs"
)

// outputsResources are the sidecar's: it holds at most the files' bytes
// and their frame, a few MiB, and its log is at most fileoutputs.StreamBytes.
var outputsResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("10m"),
		corev1.ResourceMemory:           resource.MustParse("16Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("4Mi"),
	},
	Limits: corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("100m"),
		corev1.ResourceMemory:           resource.MustParse("32Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("8Mi"),
	},
}

// addOutputsSidecar gives pod the output directory of out and the
// sidecar that hands its files over, bounded by maxBytes (the tier's).
func addOutputsSidecar(pod *corev1.PodSpec, out *schedv1.TaskOutputs, image string, maxBytes int) {
	if out == nil {
		return
	}
	pod.Volumes = append(pod.Volumes, corev1.Volume{
		Name:         outputsVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	})
	c := &pod.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: outputsVolume, MountPath: out.FromDir})
	// The non-root default user can write the directory.
	pod.SecurityContext.FSGroup = ptr.To[int64](podsecurity.NonRootUID)
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name:  OutputsContainerName,
		Image: image,
		Args: []string{fileoutputs.Command, "--dir", outputsMount,
			"--max-bytes", strconv.Itoa(maxBytes), "--max-files", strconv.Itoa(schedv1.MaxFileOutputs)},
		// Always: a native sidecar, stopped (SIGTERM) once the task's
		// container has ended, which is when it writes.
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
		VolumeMounts:    []corev1.VolumeMount{{Name: outputsVolume, MountPath: outputsMount, ReadOnly: true}},
		Resources:       outputsResources,
		SecurityContext: podsecurity.Container(nil),
		ImagePullPolicy: corev1.PullIfNotPresent,
	})
}

// outputsRefused says why task's file outputs cannot be handed over:
// the cluster has no tools image to run the sidecar.
func (s *Starter) outputsRefused(task *schedv1.AgentTask) (reason, msg string) {
	if task.Spec.Outputs == nil || s.ToolsImage != "" {
		return "", ""
	}
	return schedv1.ReasonOutputsInvalid, "spec.outputs.fromDir needs the operator's tools image for its sidecar, and this operator has none (it runs outside the cluster, with neither tools-image nor OPERATOR_IMAGE set): ask a cluster admin to set tools-image (kubectl sched install --tools-image), or write the outputs to the termination message"
}

// addOutputs adds task's output directory and sidecar to its pod, bounded
// by its namespace's tier.
func (s *Starter) addOutputs(ctx context.Context, task *schedv1.AgentTask, pod *corev1.PodSpec) error {
	if task.Spec.Outputs == nil {
		return nil
	}
	limits, err := tiers.LimitsOf(ctx, s.Client, task.Namespace)
	if err != nil {
		return err
	}
	tierBytes := 0
	if limits != nil {
		tierBytes = limits.FileOutputBytes
	}
	addOutputsSidecar(pod, task.Spec.Outputs, s.ToolsImage, FileOutputBytes(tierBytes))
	return nil
}

// FileOutputBytes is the most a task's file outputs may hold in
// namespace ns's tier (tierBytes, 0 when the tier says nothing).
func FileOutputBytes(tierBytes int) int {
	if tierBytes <= 0 || tierBytes > schedv1.MaxFileOutputBytes {
		return schedv1.MaxFileOutputBytes
	}
	return tierBytes
}

// MaxBytesOf reads back the bound the task's pod was made with: its
// sidecar's --max-bytes. A tier changed since does not change what the
// pod was told.
func MaxBytesOf(pod *corev1.Pod) int {
	for _, c := range pod.Spec.InitContainers {
		if c.Name != OutputsContainerName {
			continue
		}
		if i := slices.Index(c.Args, "--max-bytes"); i >= 0 && i+1 < len(c.Args) {
			if n, err := strconv.Atoi(c.Args[i+1]); err == nil {
				return FileOutputBytes(n)
			}
		}
	}
	return schedv1.MaxFileOutputBytes
}
