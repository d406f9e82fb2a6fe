// Package podsecurity holds the restricted defaults every pod the operator
// creates for a user starts from, so a task or app runs in a namespace that
// enforces Pod Security "restricted" without the user spelling it out, and
// the check of what a spec asks for beyond them.
package podsecurity

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// NonRootUID runs images that default to root (busybox, alpine) as non-root;
// 65532 is the conventional "nonroot" user.
const NonRootUID = 65532

// dropAll is the capability list every container drops.
const dropAll corev1.Capability = "ALL"

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
// restricted-pods policy, and again by the controllers (Violations).
func Container(user *corev1.SecurityContext) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{dropAll}},
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
		// The user's drops are added to ALL, never put in its place: a
		// list of their own (drop: [NET_RAW]) would otherwise keep every
		// other capability the runtime grants.
		for _, c := range u.Capabilities.Drop {
			if !slices.Contains(sc.Capabilities.Drop, c) {
				sc.Capabilities.Drop = append(sc.Capabilities.Drop, c)
			}
		}
		sc.Capabilities.Add = u.Capabilities.Add
	}
	// What only an opted-out namespace admits needs the defaults that
	// contradict it gone: the API refuses a privileged or CAP_SYS_ADMIN
	// container that may not escalate, and the kubelet a UID 0 one that
	// must run as non-root.
	if u.AllowPrivilegeEscalation == nil && (ptr.Deref(u.Privileged, false) || addsSysAdmin(u.Capabilities)) {
		sc.AllowPrivilegeEscalation = nil
	}
	if u.RunAsNonRoot == nil && u.RunAsUser != nil && *u.RunAsUser == 0 {
		sc.RunAsNonRoot = ptr.To(false)
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

func addsSysAdmin(c *corev1.Capabilities) bool {
	return c != nil && slices.ContainsFunc(c.Add, func(c corev1.Capability) bool { return c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN" })
}

// Spec is what a user's spec says about one pod: its container's security
// context, the annotations passed to the pod and its probes by field name
// (readinessProbe).
type Spec struct {
	SecurityContext *corev1.SecurityContext
	Annotations     map[string]string
	Probes          map[string]*corev1.Probe
}

// Violations lists, as field paths under path (spec, or
// spec.services[web]), what s asks for that Pod Security "restricted"
// refuses. The restricted-pods admission policy refuses the same outside
// namespaces labelled LabelAllowPrivilegedPods; the controllers check again
// before they write, because a label removed later does not undo what was
// admitted while it was there. Keep the two in step.
func Violations(path string, s Spec) []string {
	var out []string
	if sc := s.SecurityContext; sc != nil {
		p := path + ".securityContext"
		if ptr.Deref(sc.Privileged, false) {
			out = append(out, p+".privileged")
		}
		if ptr.Deref(sc.AllowPrivilegeEscalation, false) {
			out = append(out, p+".allowPrivilegeEscalation")
		}
		if sc.Capabilities != nil && slices.ContainsFunc(sc.Capabilities.Add, func(c corev1.Capability) bool { return c != "NET_BIND_SERVICE" }) {
			out = append(out, p+".capabilities.add")
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			out = append(out, p+".runAsUser")
		}
		if sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot {
			out = append(out, p+".runAsNonRoot")
		}
		if sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
			out = append(out, p+".seccompProfile")
		}
		if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
			out = append(out, p+".appArmorProfile")
		}
		if sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
			out = append(out, p+".procMount")
		}
		if sc.WindowsOptions != nil && ptr.Deref(sc.WindowsOptions.HostProcess, false) {
			out = append(out, p+".windowsOptions.hostProcess")
		}
		if se := sc.SELinuxOptions; se != nil && (se.User != "" || se.Role != "" || !slices.Contains(seLinuxTypes, se.Type)) {
			out = append(out, p+".seLinuxOptions")
		}
	}
	keys := make([]string, 0, len(s.Annotations))
	for k, v := range s.Annotations {
		if LoosensPodSecurity(k, v) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s.podMetadata.annotations[%s]", path, k))
	}
	fields := make([]string, 0, len(s.Probes))
	for f := range s.Probes {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		probe := s.Probes[f]
		switch {
		case probe == nil:
		case probe.HTTPGet != nil && probe.HTTPGet.Host != "":
			out = append(out, fmt.Sprintf("%s.%s.httpGet.host", path, f))
		case probe.TCPSocket != nil && probe.TCPSocket.Host != "":
			out = append(out, fmt.Sprintf("%s.%s.tcpSocket.host", path, f))
		}
	}
	return out
}

// seLinuxTypes are the SELinux types Pod Security allows ("" is none).
var seLinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

// Annotation keys that set a pod's AppArmor and seccomp profiles, from
// before they were fields.
const (
	annotationAppArmor         = "container.apparmor.security.beta.kubernetes.io/"
	annotationSeccompPod       = "seccomp.security.alpha.kubernetes.io/pod"
	annotationSeccompContainer = "container.seccomp.security.alpha.kubernetes.io/"
	profileRuntimeDefault      = "runtime/default"
	profileDockerDefault       = "docker/default"
	profileLocalhost           = "localhost/"
)

// runtimePrefixes start annotation keys that container runtimes read as
// settings of the sandbox (CRI-O's host devices, writable cgroups and
// seccomp profiles from an image; Kata's hypervisor): the admin's to set,
// not a tenant's.
var runtimePrefixes = []string{"io.kubernetes.cri-o.", "io.kubernetes.cri.", "io.katacontainers."}

// LoosensPodSecurity reports whether a pod annotation switches off what Pod
// Security confines: an AppArmor profile other than runtime/default or
// localhost/..., an unconfined seccomp profile, or a setting for the
// container runtime (io.kubernetes.cri-o.*, io.katacontainers.*, a key in
// the crio.io or cri-o.io domains).
func LoosensPodSecurity(key, value string) bool {
	switch {
	case strings.HasPrefix(key, annotationAppArmor):
		return value != profileRuntimeDefault && !strings.HasPrefix(value, profileLocalhost)
	case key == annotationSeccompPod || strings.HasPrefix(key, annotationSeccompContainer):
		return value != profileRuntimeDefault && value != profileDockerDefault && !strings.HasPrefix(value, profileLocalhost)
	}
	for _, p := range runtimePrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	// CRI-O also reads plain names under its domains (cpu-load-balancing.crio.io).
	domain, _, _ := strings.Cut(key, "/")
	return domain == "crio.io" || domain == "cri-o.io" || strings.HasSuffix(domain, ".crio.io") || strings.HasSuffix(domain, ".cri-o.io")
}

// AnnotationDomainAllowed reports whether a pod annotation key may come
// from a tenant's podMetadata: a key without a domain (no "/") always, a
// key of a domain among domains or a subdomain of one, any key when
// domains holds "*". Other domains are read by the cluster's networking,
// service mesh or autoscaler (Multus's k8s.v1.cni.cncf.io/networks,
// Calico's cni.projectcalico.org/ipAddrs, Istio's sidecar.istio.io,
// cluster-autoscaler.kubernetes.io/safe-to-evict): the admin's to allow.
func AnnotationDomainAllowed(key string, domains []string) bool {
	domain, _, prefixed := strings.Cut(key, "/")
	if !prefixed {
		return true
	}
	for _, d := range domains {
		if d == "*" || domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}

// DisallowedAnnotations lists, sorted, as field paths under path (spec,
// spec.services[web]), the keys of annotations whose domain domains does
// not allow (AnnotationDomainAllowed). The pod-annotation-domains
// admission policy refuses the same: keep the two in step.
func DisallowedAnnotations(path string, annotations map[string]string, domains []string) []string {
	var out []string
	for k := range annotations {
		if !AnnotationDomainAllowed(k, domains) {
			out = append(out, fmt.Sprintf("%s.podMetadata.annotations[%s]", path, k))
		}
	}
	sort.Strings(out)
	return out
}

// AnnotationsNotAllowed says why fields (DisallowedAnnotations) keep a pod
// from starting, naming the setting that would allow them.
func AnnotationsNotAllowed(fields, domains []string) string {
	allowed := "none"
	if len(domains) > 0 {
		allowed = strings.Join(domains, ", ")
	}
	return fmt.Sprintf("%s: pod annotations of this domain are not allowed (--allowed-pod-annotation-domains: %s; keys without a domain always are)", strings.Join(fields, ", "), allowed)
}
