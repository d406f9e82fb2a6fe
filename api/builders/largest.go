package builders

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// LargestTaskSpec fills every list, map and string of an AgentTask spec
// to its CRD bound: the largest AgentTask spec there can be, and the
// largest workflow step (README, Security model).
func LargestTaskSpec() schedv1.AgentTaskSpec {
	s := strings.Repeat
	id := func(prefix string, i, n int) string {
		p := fmt.Sprintf("%s%d-", prefix, i)
		return p + s("x", n-len(p))
	}
	spec := schedv1.AgentTaskSpec{
		Image:              s("i", 512),
		ServiceAccountName: s("s", 253),
		Resources:          schedv1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}},
		Placement:          &schedv1.Placement{},
		PodMetadata:        &schedv1.PodMetadata{Labels: map[string]string{}, Annotations: map[string]string{}},
		SecurityContext: &schedv1.SecurityContext{
			Capabilities:    &schedv1.Capabilities{},
			SELinuxOptions:  &corev1.SELinuxOptions{Level: s("l", 253)},
			SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To(s("p", 4096))},
			AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(s("p", 4096))},
			WindowsOptions:  &corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr.To(s("g", 253)), GMSACredentialSpec: ptr.To(s("g", 8192)), RunAsUserName: ptr.To(s("u", 256))},
		},
	}
	for i := range 32 {
		spec.Command = append(spec.Command, s("c", 4096))
		spec.PodMetadata.Labels[id("l", i, 317)] = s("v", 63)
		spec.PodMetadata.Annotations[id("a", i, 317)] = s("v", 8192)
	}
	for i := range 64 {
		spec.Args = append(spec.Args, s("a", 4096))
		spec.Env = append(spec.Env, schedv1.EnvVar{Name: id("E", i, 128), Value: s("v", 4096)})
		spec.SecurityContext.Capabilities.Drop = append(spec.SecurityContext.Capabilities.Drop, corev1.Capability(id("C", i, 64)))
		spec.SecurityContext.Capabilities.Add = append(spec.SecurityContext.Capabilities.Add, corev1.Capability(id("A", i, 64)))
	}
	for i := range 16 {
		q := resource.MustParse("1")
		spec.Resources.Limits[corev1.ResourceName(id("r", i, 317))] = q
		spec.Resources.Requests[corev1.ResourceName(id("r", i, 317))] = q
		spec.Placement.Tolerations = append(spec.Placement.Tolerations, corev1.Toleration{Key: id("t", i, 317), Operator: corev1.TolerationOpEqual, Value: s("v", 63), Effect: corev1.TaintEffectNoSchedule})
	}
	for i := range 8 {
		spec.Placement.NodePools = append(spec.Placement.NodePools, id("p", i, 63))
	}
	for i := range schedv1.MaxWorkspaceMounts {
		spec.Workspaces = append(spec.Workspaces, schedv1.WorkspaceMount{
			Name: id("w", i, 40), MountPath: "/" + id("m", i, 255), ClaimName: id("c", i, 253), Node: id("n", i, 253), ReadOnly: true,
		})
	}
	spec.Retry = &schedv1.RetryPolicy{Limit: 10, Backoff: &metav1.Duration{Duration: 10 * time.Minute}}
	for c := range int32(32) {
		spec.Retry.OnExitCodes = append(spec.Retry.OnExitCodes, 224+c)
	}
	return spec
}

// LargestTenantTaskSpec is LargestTaskSpec as a tenant can run it: without
// what a tier keeps to admins (added capabilities, node pools,
// tolerations, resources past its LimitRange), and with keys Kubernetes
// takes on a pod (a 253-character prefix and a 63-character name) and
// annotations within a pod's 256 KiB. Every string a tenant sizes most
// (command, args, env, pod metadata) is at its bound.
func LargestTenantTaskSpec() schedv1.AgentTaskSpec {
	spec := LargestTaskSpec()
	spec.SecurityContext.Capabilities.Add = nil
	spec.Placement = nil
	spec.Resources = schedv1.ResourceRequirements{}
	// Windows takes a user name of up to 104 characters, and the
	// credential spec as JSON.
	spec.SecurityContext.WindowsOptions.RunAsUserName = ptr.To(strings.Repeat("u", 104))
	spec.SecurityContext.WindowsOptions.GMSACredentialSpec = ptr.To(`{"x":"` + strings.Repeat("g", 8184) + `"}`)
	// A pod takes an AppArmor profile name of 4095 bytes, one fewer than
	// the CRD.
	spec.SecurityContext.AppArmorProfile.LocalhostProfile = ptr.To(strings.Repeat("p", 4095))
	prefix := strings.Join([]string{strings.Repeat("a", 63), strings.Repeat("b", 63), strings.Repeat("c", 63), strings.Repeat("d", 61)}, ".")
	key := func(i int) string { return fmt.Sprintf("%s/k%02d-%s", prefix, i, strings.Repeat("x", 59)) }
	spec.PodMetadata = &schedv1.PodMetadata{Labels: map[string]string{}, Annotations: map[string]string{}}
	for i := range 32 {
		spec.PodMetadata.Labels[key(i)] = strings.Repeat("v", 63)
		spec.PodMetadata.Annotations[key(i)] = strings.Repeat("v", 7600)
	}
	for i := range spec.Env {
		spec.Env[i].Name = fmt.Sprintf("E%02d_%s", i, strings.Repeat("X", 124))
	}
	return spec
}
