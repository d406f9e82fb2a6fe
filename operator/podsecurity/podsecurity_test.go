package podsecurity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestContainerMergesOverTheRestrictedDefault(t *testing.T) {
	restricted := func(edit func(*corev1.SecurityContext)) *corev1.SecurityContext {
		sc := &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Privileged:               ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			RunAsNonRoot:             ptr.To(true),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
		if edit != nil {
			edit(sc)
		}
		return sc
	}
	cases := map[string]struct {
		user *corev1.SecurityContext
		want *corev1.SecurityContext
	}{
		"nothing set: the restricted default": {
			want: restricted(nil),
		},
		"one harmless field keeps every default": {
			user: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
			want: restricted(func(sc *corev1.SecurityContext) { sc.ReadOnlyRootFilesystem = ptr.To(true) }),
		},
		"a user and group of their own": {
			user: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000)},
			want: restricted(func(sc *corev1.SecurityContext) {
				sc.RunAsUser = ptr.To[int64](1000)
				sc.RunAsGroup = ptr.To[int64](1000)
			}),
		},
		"adding NET_BIND_SERVICE still drops ALL": {
			user: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
			want: restricted(func(sc *corev1.SecurityContext) { sc.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"} }),
		},
		"a localhost seccomp profile replaces RuntimeDefault": {
			user: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}},
			want: restricted(func(sc *corev1.SecurityContext) {
				sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Container(tc.user)); diff != "" {
				t.Errorf("Container() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerDoesNotAliasTheUsersObject(t *testing.T) {
	user := &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}
	got := Container(user)
	got.Capabilities.Add[0] = "CHANGED"
	if user.Capabilities.Add[0] != "NET_BIND_SERVICE" {
		t.Errorf("Container() shares the user's capabilities slice")
	}
}

func TestPodIsNonRootWithRuntimeDefaultSeccomp(t *testing.T) {
	p := Pod()
	if !ptr.Deref(p.RunAsNonRoot, false) || ptr.Deref(p.RunAsUser, 0) != NonRootUID || p.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("Pod() = %+v, want non-root %d with RuntimeDefault seccomp", p, NonRootUID)
	}
}
