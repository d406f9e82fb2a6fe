// Package podsecurity holds the restricted defaults every pod the operator
// creates for a user starts from, so a task or app runs in a namespace that
// enforces Pod Security "restricted" without the user spelling it out.
package podsecurity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// NonRootUID runs images that default to root (busybox, alpine) as non-root;
// 65532 is the conventional "nonroot" user.
const NonRootUID = 65532

// Pod is the restricted pod-level default: non-root and seccomp RuntimeDefault.
func Pod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](NonRootUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// Container merges the user's container security context over the restricted
// default field by field: setting one harmless field (readOnlyRootFilesystem,
// say) keeps every other default. What the user may not set at all
// (privileged, added capabilities, UID 0) is refused at admission by the
// restricted-pods policy, not here.
func Container(user *corev1.SecurityContext) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if user == nil {
		return sc
	}
	u := user.DeepCopy()
	if u.Privileged != nil {
		sc.Privileged = u.Privileged
	}
	if u.AllowPrivilegeEscalation != nil {
		sc.AllowPrivilegeEscalation = u.AllowPrivilegeEscalation
	}
	if u.Capabilities != nil {
		// Dropping ALL stays unless the user drops a list of their own.
		if len(u.Capabilities.Drop) > 0 {
			sc.Capabilities.Drop = u.Capabilities.Drop
		}
		sc.Capabilities.Add = u.Capabilities.Add
	}
	if u.RunAsNonRoot != nil {
		sc.RunAsNonRoot = u.RunAsNonRoot
	}
	if u.SeccompProfile != nil {
		sc.SeccompProfile = u.SeccompProfile
	}
	sc.RunAsUser = u.RunAsUser
	sc.RunAsGroup = u.RunAsGroup
	sc.ReadOnlyRootFilesystem = u.ReadOnlyRootFilesystem
	sc.SELinuxOptions = u.SELinuxOptions
	sc.WindowsOptions = u.WindowsOptions
	sc.ProcMount = u.ProcMount
	sc.AppArmorProfile = u.AppArmorProfile
	return sc
}
