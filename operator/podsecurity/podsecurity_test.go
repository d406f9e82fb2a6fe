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
		"a drop list of their own is added to ALL": {
			user: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW", "ALL", "NET_RAW"}}},
			want: restricted(func(sc *corev1.SecurityContext) { sc.Capabilities.Drop = []corev1.Capability{"ALL", "NET_RAW"} }),
		},
		"a drop list beside an added capability": {
			user: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"CHOWN"}}},
			want: restricted(func(sc *corev1.SecurityContext) {
				sc.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
				sc.Capabilities.Drop = []corev1.Capability{"ALL", "CHOWN"}
			}),
		},
		"an empty capabilities object still drops ALL": {
			user: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{}},
			want: restricted(nil),
		},
		"privileged (opted-out namespaces) may escalate, as the API requires": {
			user: &corev1.SecurityContext{Privileged: ptr.To(true)},
			want: restricted(func(sc *corev1.SecurityContext) { sc.Privileged = ptr.To(true); sc.AllowPrivilegeEscalation = nil }),
		},
		"SYS_ADMIN (opted-out namespaces) may escalate, as the API requires": {
			user: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}},
			want: restricted(func(sc *corev1.SecurityContext) {
				sc.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
				sc.AllowPrivilegeEscalation = nil
			}),
		},
		"privileged with escalation refused keeps the user's word": {
			user: &corev1.SecurityContext{Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)},
			want: restricted(func(sc *corev1.SecurityContext) { sc.Privileged = ptr.To(true) }),
		},
		"UID 0 (opted-out namespaces) is not also required to be non-root": {
			user: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)},
			want: restricted(func(sc *corev1.SecurityContext) { sc.RunAsUser = ptr.To[int64](0); sc.RunAsNonRoot = ptr.To(false) }),
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

func TestContainerDoesNotAliasTheUsersDropList(t *testing.T) {
	user := &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}
	got := Container(user)
	got.Capabilities.Drop[1] = "CHANGED"
	if user.Capabilities.Drop[0] != "NET_RAW" || len(user.Capabilities.Drop) != 1 {
		t.Errorf("Container() changed the user's drop list: %v", user.Capabilities.Drop)
	}
}

func TestViolations(t *testing.T) {
	cases := map[string]struct {
		spec Spec
		want []string
	}{
		"nothing": {},
		"what restricted allows": {
			spec: Spec{
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true), Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:    &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"NET_RAW"}},
					SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")},
					AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault},
					SELinuxOptions:  &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c1,c2"},
				},
				Annotations: map[string]string{
					"container.apparmor.security.beta.kubernetes.io/task": "localhost/my-profile",
					"container.apparmor.security.beta.kubernetes.io/web":  "runtime/default",
					"seccomp.security.alpha.kubernetes.io/pod":            "runtime/default",
					"prometheus.io/scrape":                                "true",
				},
				Probes: map[string]*corev1.Probe{
					"readinessProbe": {ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}},
					"livenessProbe":  {ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}},
				},
			},
		},
		"every security context field": {
			spec: Spec{SecurityContext: &corev1.SecurityContext{
				Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(true),
				Capabilities:    &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "SYS_ADMIN"}},
				RunAsUser:       ptr.To[int64](0),
				RunAsNonRoot:    ptr.To(false),
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
				ProcMount:       ptr.To(corev1.UnmaskedProcMount),
				WindowsOptions:  &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)},
				SELinuxOptions:  &corev1.SELinuxOptions{Type: "spc_t"},
			}},
			want: []string{
				"spec.securityContext.privileged", "spec.securityContext.allowPrivilegeEscalation", "spec.securityContext.capabilities.add",
				"spec.securityContext.runAsUser", "spec.securityContext.runAsNonRoot", "spec.securityContext.seccompProfile",
				"spec.securityContext.appArmorProfile", "spec.securityContext.procMount", "spec.securityContext.windowsOptions.hostProcess",
				"spec.securityContext.seLinuxOptions",
			},
		},
		"annotations that loosen, sorted": {
			spec: Spec{Annotations: map[string]string{
				"container.apparmor.security.beta.kubernetes.io/task": "unconfined",
				"seccomp.security.alpha.kubernetes.io/pod":            "unconfined",
				"io.kubernetes.cri-o.Devices":                         "/dev/mem",
			}},
			want: []string{
				"spec.podMetadata.annotations[container.apparmor.security.beta.kubernetes.io/task]",
				"spec.podMetadata.annotations[io.kubernetes.cri-o.Devices]",
				"spec.podMetadata.annotations[seccomp.security.alpha.kubernetes.io/pod]",
			},
		},
		"probes aimed at another host": {
			spec: Spec{Probes: map[string]*corev1.Probe{
				"readinessProbe": {ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/latest/meta-data"}}},
				"livenessProbe":  {ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1"}}},
				"startupProbe":   nil,
			}},
			want: []string{"spec.livenessProbe.tcpSocket.host", "spec.readinessProbe.httpGet.host"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Violations("spec", tc.spec)); diff != "" {
				t.Errorf("Violations() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoosensPodSecurity(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       bool
	}{
		{"container.apparmor.security.beta.kubernetes.io/task", "unconfined", true},
		{"container.apparmor.security.beta.kubernetes.io/task", "", true},
		{"container.apparmor.security.beta.kubernetes.io/task", "runtime/default", false},
		{"container.apparmor.security.beta.kubernetes.io/task", "localhost/k8s-nginx", false},
		{"seccomp.security.alpha.kubernetes.io/pod", "unconfined", true},
		{"container.seccomp.security.alpha.kubernetes.io/task", "unconfined", true},
		{"container.seccomp.security.alpha.kubernetes.io/task", "docker/default", false},
		{"seccomp.security.alpha.kubernetes.io/pod", "localhost/profile.json", false},
		{"io.kubernetes.cri-o.Devices", "/dev/sda", true},
		{"io.kubernetes.cri-o.cgroup2-mount-hierarchy-rw", "true", true},
		{"io.kubernetes.cri.untrusted-workload", "false", true},
		{"io.katacontainers.config.hypervisor.path", "/tmp/evil", true},
		{"seccomp-profile.kubernetes.cri-o.io/task", "quay.io/evil/profile:latest", true},
		{"cpu-load-balancing.crio.io", "disable", true},
		{"irq-load-balancing.crio.io/x", "disable", true},
		{"prometheus.io/scrape", "true", false},
		{"kubectl.kubernetes.io/default-container", "task", false},
		{"sim.kubectl-sched.dev/exit-code", "3", false},
	} {
		if got := LoosensPodSecurity(tc.key, tc.value); got != tc.want {
			t.Errorf("LoosensPodSecurity(%q, %q) = %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
}

func TestAnnotationDomainAllowed(t *testing.T) {
	own := []string{"kubectl-sched.dev"}
	for _, tc := range []struct {
		key     string
		domains []string
		want    bool
	}{
		{"note", nil, true},
		{"team", own, true},
		{"sim.kubectl-sched.dev/exit-code", own, true},
		{"kubectl-sched.dev/x", own, true},
		{"k8s.v1.cni.cncf.io/networks", own, false},
		{"cni.projectcalico.org/ipAddrs", own, false},
		{"sidecar.istio.io/inject", own, false},
		{"cluster-autoscaler.kubernetes.io/safe-to-evict", own, false},
		{"evilkubectl-sched.dev/x", own, false},
		{"kubectl-sched.dev.evil.com/x", own, false},
		{"prometheus.io/scrape", nil, false},
		{"prometheus.io/scrape", []string{"prometheus.io"}, true},
		{"sidecar.istio.io/inject", []string{"istio.io"}, true},
		{"k8s.v1.cni.cncf.io/networks", []string{"*"}, true},
	} {
		if got := AnnotationDomainAllowed(tc.key, tc.domains); got != tc.want {
			t.Errorf("AnnotationDomainAllowed(%q, %v) = %v, want %v", tc.key, tc.domains, got, tc.want)
		}
	}
	got := DisallowedAnnotations("spec", map[string]string{"note": "", "sidecar.istio.io/inject": "", "k8s.v1.cni.cncf.io/networks": "", "sim.kubectl-sched.dev/x": ""}, own)
	want := []string{"spec.podMetadata.annotations[k8s.v1.cni.cncf.io/networks]", "spec.podMetadata.annotations[sidecar.istio.io/inject]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DisallowedAnnotations (-want +got):\n%s", diff)
	}
}
