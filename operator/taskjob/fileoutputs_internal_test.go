package taskjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// The task's container gets a writable directory; the sidecar reads it
// read-only, runs as the restricted default, and is told the tier's bound.
func TestOutputsSidecar(t *testing.T) {
	task := MakeAgentTask("t", "ns").Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) {
		s.Outputs = &schedv1.TaskOutputs{FromDir: "/out"}
	}).Obj()
	pod := buildJob(task, nil).Spec.Template.Spec
	addOutputsSidecar(&pod, task.Spec.Outputs, "example.com/operator:v1", FileOutputBytes(64<<10))

	if diff := cmp.Diff([]corev1.VolumeMount{{Name: outputsVolume, MountPath: "/out"}}, pod.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("task container mounts (-want +got):\n%s", diff)
	}
	if len(pod.InitContainers) != 1 {
		t.Fatalf("init containers %d, want the sidecar", len(pod.InitContainers))
	}
	c := pod.InitContainers[0]
	want := []string{"outputs", "--dir", outputsMount, "--max-bytes", "65536", "--max-files", "64"}
	if diff := cmp.Diff(want, c.Args); diff != "" {
		t.Errorf("sidecar args (-want +got):\n%s", diff)
	}
	if c.Image != "example.com/operator:v1" || ptr.Deref(c.RestartPolicy, "") != corev1.ContainerRestartPolicyAlways {
		t.Errorf("sidecar image %s, restartPolicy %v; want the tools image as a native sidecar", c.Image, c.RestartPolicy)
	}
	if len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("sidecar mounts %v, want the directory read-only", c.VolumeMounts)
	}
	if sc := c.SecurityContext; sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) {
		t.Errorf("sidecar security context %+v, want the restricted default", sc)
	}
	if got := MaxBytesOf(&corev1.Pod{Spec: pod}); got != 64<<10 {
		t.Errorf("MaxBytesOf = %d, want the bound the pod was made with", got)
	}
	if got := MaxBytesOf(&corev1.Pod{}); got != schedv1.MaxFileOutputBytes {
		t.Errorf("MaxBytesOf a pod without the sidecar = %d, want the API's bound", got)
	}
	for tier, want := range map[int]int{0: schedv1.MaxFileOutputBytes, 4096: 4096, 2 << 20: schedv1.MaxFileOutputBytes} {
		if got := FileOutputBytes(tier); got != want {
			t.Errorf("FileOutputBytes(%d) = %d, want %d", tier, got, want)
		}
	}
}
