package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

const optOutLabel = schedv1.LabelAllowPrivilegedPods

// tenant makes a namespace whose only user is bound to kubectl-sched-edit
// (as the built-in edit role would carry it by aggregation) and returns a
// client that acts as that user.
func tenant(t *testing.T, namespace, user string, labels map[string]string) client.Client {
	t.Helper()
	ctx := context.Background()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: labels}}
	if err := env.Client.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), nsObj) })
	var allowed []authorizationv1.ResourceAttributes
	for _, resource := range []string{"agenttasks", "workflows", "cronworkflows", "userdeployments"} {
		allowed = append(allowed, authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: resource})
	}
	c, err := testenv.BindUser(ctx, env.Client, env.Config, namespace, user, "kubectl-sched-edit", allowed...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTenantCannotAskForAPrivilegedPod tries, as a namespace user, every way
// of asking the operator for a pod that Pod Security "restricted" would
// refuse, and expects each refused with a message naming the field.
func TestTenantCannotAskForAPrivilegedPod(t *testing.T) {
	alice := tenant(t, "tenant-alice", "alice", nil)
	const tns = "tenant-alice"
	sc := func(edit func(*schedv1.SecurityContext)) *schedv1.SecurityContext {
		s := &schedv1.SecurityContext{}
		edit(s)
		return s
	}
	cases := map[string]struct {
		obj       client.Object
		wantField string
		wantMsg   string
	}{
		"task: privileged": {
			obj:       MakeAgentTask("p", tns).Image("busybox").SecurityContext(sc(func(s *schedv1.SecurityContext) { s.Privileged = ptr.To(true) })).Obj(),
			wantField: "spec.securityContext.privileged", wantMsg: "privileged containers are not allowed",
		},
		"task: privilege escalation": {
			obj:       MakeAgentTask("p", tns).Image("busybox").SecurityContext(sc(func(s *schedv1.SecurityContext) { s.AllowPrivilegeEscalation = ptr.To(true) })).Obj(),
			wantField: "spec.securityContext.allowPrivilegeEscalation", wantMsg: "privilege escalation is not allowed",
		},
		"task: SYS_ADMIN": {
			obj: MakeAgentTask("p", tns).Image("busybox").SecurityContext(sc(func(s *schedv1.SecurityContext) {
				s.Capabilities = &schedv1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "SYS_ADMIN"}}
			})).Obj(),
			wantField: "spec.securityContext.capabilities.add", wantMsg: "only NET_BIND_SERVICE may be added",
		},
		"task: UID 0": {
			obj:       MakeAgentTask("p", tns).Image("busybox").SecurityContext(sc(func(s *schedv1.SecurityContext) { s.RunAsUser = ptr.To[int64](0) })).Obj(),
			wantField: "spec.securityContext.runAsUser", wantMsg: "may not run as root",
		},
		"task: runAsNonRoot false": {
			obj:       MakeAgentTask("p", tns).Image("busybox").SecurityContext(sc(func(s *schedv1.SecurityContext) { s.RunAsNonRoot = ptr.To(false) })).Obj(),
			wantField: "spec.securityContext.runAsNonRoot", wantMsg: "may not run as root",
		},
		"task: seccomp Unconfined": {
			obj: MakeAgentTask("p", tns).Image("busybox").SecurityContext(sc(func(s *schedv1.SecurityContext) {
				s.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
			})).Obj(),
			wantField: "spec.securityContext", wantMsg: "must stay confined",
		},
		"task: unmasked /proc": {
			obj: MakeAgentTask("p", tns).Image("busybox").SecurityContext(sc(func(s *schedv1.SecurityContext) {
				s.ProcMount = ptr.To(corev1.UnmaskedProcMount)
			})).Obj(),
			wantField: "spec.securityContext", wantMsg: "must stay confined",
		},
		"workflow: a later step privileged": {
			obj: MakeWorkflow("w", tns).Step("a", "busybox").StepTask("b", schedv1.AgentTaskSpec{
				Image: "busybox", SecurityContext: sc(func(s *schedv1.SecurityContext) { s.Privileged = ptr.To(true) }),
			}).Obj(),
			wantField: "spec.steps[b].task.securityContext.privileged", wantMsg: "privileged containers are not allowed",
		},
		"workflow: a finally step privileged": {
			obj: MakeWorkflow("w", tns).Step("a", "busybox").Finally("cleanup", schedv1.AgentTaskSpec{
				Image: "busybox", SecurityContext: sc(func(s *schedv1.SecurityContext) { s.Privileged = ptr.To(true) }),
			}).Obj(),
			wantField: "spec.finally[cleanup].task.securityContext.privileged", wantMsg: "privileged containers are not allowed",
		},
		"workflow: a finally step's pod unconfined by annotation, beside an approval step": {
			obj: MakeWorkflow("w", tns).Approval("gate", "").Step("a", "busybox").Finally("cleanup", schedv1.AgentTaskSpec{
				Image: "busybox", PodMetadata: &schedv1.PodMetadata{Annotations: map[string]string{"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}},
			}).Obj(),
			wantField: "spec.finally[cleanup].task.podMetadata.annotations[seccomp.security.alpha.kubernetes.io/pod]", wantMsg: "AppArmor and seccomp must stay confined",
		},
		"app: a service with privilege escalation": {
			obj: MakeUserDeployment("u", tns).Service("web", "nginx", 80, schedv1.ExposureInternal).
				EditService("web", func(s *schedv1.ServiceSpec) {
					s.SecurityContext = sc(func(s *schedv1.SecurityContext) { s.AllowPrivilegeEscalation = ptr.To(true) })
				}).Obj(),
			wantField: "spec.services[web].securityContext.allowPrivilegeEscalation", wantMsg: "privilege escalation is not allowed",
		},
		"task: AppArmor unconfined by annotation": {
			obj:       MakeAgentTask("p", tns).Image("busybox").PodAnnotation("container.apparmor.security.beta.kubernetes.io/task", "unconfined").Obj(),
			wantField: "spec.podMetadata.annotations[container.apparmor.security.beta.kubernetes.io/task]", wantMsg: "AppArmor and seccomp must stay confined",
		},
		"workflow: a step's pod seccomp unconfined by annotation": {
			obj: MakeWorkflow("w", tns).Step("a", "busybox").StepTask("b", schedv1.AgentTaskSpec{
				Image: "busybox", PodMetadata: &schedv1.PodMetadata{Annotations: map[string]string{"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}},
			}).Obj(),
			wantField: "spec.steps[b].task.podMetadata.annotations[seccomp.security.alpha.kubernetes.io/pod]", wantMsg: "AppArmor and seccomp must stay confined",
		},
		"app: a service's AppArmor unconfined by annotation": {
			obj: MakeUserDeployment("u", tns).Service("web", "nginx", 80, schedv1.ExposureInternal).
				ServicePodAnnotation("web", "container.apparmor.security.beta.kubernetes.io/web", "unconfined").Obj(),
			wantField: "spec.services[web].podMetadata.annotations[container.apparmor.security.beta.kubernetes.io/web]", wantMsg: "AppArmor and seccomp must stay confined",
		},
		"task: host devices through a CRI-O annotation": {
			obj:       MakeAgentTask("p", tns).Image("busybox").PodAnnotation("io.kubernetes.cri-o.Devices", "/dev/mem:/dev/mem:rwm").Obj(),
			wantField: "spec.podMetadata.annotations[io.kubernetes.cri-o.Devices]", wantMsg: "annotations for the container runtime",
		},
		"app: a readiness probe aimed at the metadata service": {
			obj: MakeUserDeployment("u", tns).Service("web", "nginx", 80, schedv1.ExposureInternal).
				EditService("web", func(s *schedv1.ServiceSpec) {
					s.ReadinessProbe = &schedv1.Probe{HTTPGet: &schedv1.HTTPGetAction{
						Host: "169.254.169.254", Path: "/latest/meta-data/iam/security-credentials/", Port: intstr.FromInt32(80),
					}}
				}).Obj(),
			wantField: "spec.services[web].readinessProbe.httpGet.host", wantMsg: "a probe may not name a host",
		},
		"app: a liveness probe scanning another host's port": {
			obj: MakeUserDeployment("u", tns).Service("web", "nginx", 80, schedv1.ExposureInternal).
				EditService("web", func(s *schedv1.ServiceSpec) {
					s.LivenessProbe = &schedv1.Probe{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1", Port: intstr.FromInt32(6443)}}
				}).Obj(),
			wantField: "spec.services[web].livenessProbe.tcpSocket.host", wantMsg: "a probe may not name a host",
		},
		"app: a service as root": {
			obj: MakeUserDeployment("u", tns).Service("web", "nginx", 80, schedv1.ExposureInternal).
				EditService("web", func(s *schedv1.ServiceSpec) {
					s.SecurityContext = sc(func(s *schedv1.SecurityContext) { s.RunAsUser = ptr.To[int64](0) })
				}).Obj(),
			wantField: "spec.services[web].securityContext.runAsUser", wantMsg: "may not run as root",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := alice.Create(context.Background(), tc.obj)
			if err == nil {
				_ = env.Client.Delete(context.Background(), tc.obj)
				t.Fatalf("created; want it refused")
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want invalid or forbidden", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to name %q and say %q", err, tc.wantField, tc.wantMsg)
			}
		})
	}

	// Nor may an update sneak it in.
	t.Run("task: privileged by update", func(t *testing.T) {
		task := MakeAgentTask("later", tns).Image("busybox").Obj()
		if err := alice.Create(context.Background(), task); err != nil {
			t.Fatal(err)
		}
		task.Spec.SecurityContext = &schedv1.SecurityContext{Privileged: ptr.To(true)}
		if err := alice.Update(context.Background(), task); err == nil || !strings.Contains(err.Error(), "privileged containers are not allowed") {
			t.Errorf("update err = %v, want privileged refused", err)
		}
	})
}

// TestTenantMayTightenOrChooseAUser: what Pod Security "restricted" allows
// is accepted from a namespace user.
func TestTenantMayTightenOrChooseAUser(t *testing.T) {
	bob := tenant(t, "tenant-bob", "bob", nil)
	const tns = "tenant-bob"
	ok := &schedv1.SecurityContext{
		ReadOnlyRootFilesystem: ptr.To(true),
		RunAsUser:              ptr.To[int64](1000),
		Capabilities:           &schedv1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:         &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	probe := &schedv1.Probe{HTTPGet: &schedv1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}}
	for _, obj := range []client.Object{
		MakeAgentTask("t", tns).Image("busybox").SecurityContext(ok.DeepCopy()).Obj(),
		MakeAgentTask("profiles", tns).Image("busybox").
			PodAnnotation("container.apparmor.security.beta.kubernetes.io/task", "localhost/k8s-apparmor-example").
			PodAnnotation("seccomp.security.alpha.kubernetes.io/pod", "runtime/default").
			PodAnnotation("prometheus.io/scrape", "true").Obj(),
		MakeUserDeployment("probed", tns).Service("web", "nginx", 80, schedv1.ExposureInternal).
			EditService("web", func(s *schedv1.ServiceSpec) { s.ReadinessProbe, s.LivenessProbe = probe.DeepCopy(), probe.DeepCopy() }).Obj(),
		MakeWorkflow("w", tns).StepTask("a", schedv1.AgentTaskSpec{Image: "busybox", SecurityContext: ok.DeepCopy()}).Obj(),
		MakeUserDeployment("u", tns).Service("web", "nginx", 80, schedv1.ExposureInternal).
			EditService("web", func(s *schedv1.ServiceSpec) { s.SecurityContext = ok.DeepCopy() }).Obj(),
	} {
		if err := bob.Create(context.Background(), obj); err != nil {
			t.Errorf("create %T: %v", obj, err)
		}
	}

	// Fields the API does not have (host namespaces, hostPath) are dropped, not passed on.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": schedv1.GroupVersion.String(), "kind": "AgentTask",
		"metadata": map[string]any{"name": "host", "namespace": tns},
		"spec":     map[string]any{"image": "busybox", "hostNetwork": true, "hostPID": true},
	}}
	if err := bob.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	if err := bob.Get(context.Background(), client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "hostNetwork"); found {
		t.Errorf("spec.hostNetwork was stored: %v", got.Object["spec"])
	}
}

// TestOnlyAClusterAdminOptsANamespaceOut: the opt-out label is out of a
// namespace user's reach, and once an admin sets it the namespace may ask
// for privileged pods.
func TestOnlyAClusterAdminOptsANamespaceOut(t *testing.T) {
	carol := tenant(t, "tenant-carol", "carol", nil)
	nsObj := &corev1.Namespace{}
	if err := carol.Get(context.Background(), client.ObjectKey{Name: "tenant-carol"}, nsObj); err == nil {
		nsObj.Labels = map[string]string{optOutLabel: "true"}
		if err := carol.Update(context.Background(), nsObj); !apierrors.IsForbidden(err) {
			t.Errorf("tenant labelling their namespace: err = %v, want forbidden", err)
		}
	} else if !apierrors.IsForbidden(err) {
		t.Fatalf("get namespace: %v", err)
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+optOutLabel+`":"true"}}}`))
	if err := carol.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-carol"}}, patch); !apierrors.IsForbidden(err) {
		t.Errorf("tenant patching the label: err = %v, want forbidden", err)
	}

	dave := tenant(t, "tenant-dave", "dave", map[string]string{optOutLabel: "true"})
	priv := MakeAgentTask("p", "tenant-dave").Image("busybox").SecurityContext(&schedv1.SecurityContext{Privileged: ptr.To(true)}).Obj()
	if err := dave.Create(context.Background(), priv); err != nil {
		t.Errorf("privileged task in an opted-out namespace: %v", err)
	}
}

// TestTenantCannotTouchSchedExtOrOtherNamespaces: kubectl-sched-edit is
// namespaced; SchedExt (cluster-scoped) and other tenants stay out of reach.
func TestTenantCannotTouchSchedExtOrOtherNamespaces(t *testing.T) {
	erin := tenant(t, "tenant-erin", "erin", nil)
	_ = tenant(t, "tenant-frank", "frank", nil)
	scx := MakeSchedExt("s").Scheduler("scx_rusty").Obj()
	if err := erin.Create(context.Background(), scx); !apierrors.IsForbidden(err) {
		t.Errorf("tenant creating a SchedExt: err = %v, want forbidden", err)
	}
	other := MakeAgentTask("t", "tenant-frank").Image("busybox").Obj()
	if err := erin.Create(context.Background(), other); !apierrors.IsForbidden(err) {
		t.Errorf("tenant creating in another namespace: err = %v, want forbidden", err)
	}
	if err := erin.List(context.Background(), &schedv1.AgentTaskList{}, client.InNamespace("tenant-frank")); !apierrors.IsForbidden(err) {
		t.Errorf("tenant listing another namespace: err = %v, want forbidden", err)
	}
}

// TestTenantCannotWriteRoutingRules: a path or host carrying ingress rule
// syntax is refused, so no input can rewrite a Traefik rule to capture
// other hosts' traffic.
func TestTenantCannotWriteRoutingRules(t *testing.T) {
	gina := tenant(t, "tenant-gina", "gina", nil)
	const tns = "tenant-gina"
	cases := map[string]struct {
		obj       client.Object
		wantField string
	}{
		"ingress path": {
			obj: MakeUserDeployment("a", tns).Service("web", "nginx", 80, schedv1.ExposurePublic).
				Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Path: "/x`) || PathPrefix(`/"} }).Obj(),
			wantField: "spec.ingress.path",
		},
		"service ingress path": {
			obj: MakeUserDeployment("a", tns).Service("web", "nginx", 80, schedv1.ExposurePublic).
				EditService("web", func(s *schedv1.ServiceSpec) { s.IngressPath = "/x\") || Host(\"evil" }).Obj(),
			wantField: "spec.services[0].ingressPath",
		},
		"host": {
			obj: MakeUserDeployment("a", tns).Service("web", "nginx", 80, schedv1.ExposurePublic).
				Spec(func(s *schedv1.UserDeploymentSpec) {
					s.Ingress = &schedv1.IngressSpec{Host: "a.example.com`) || Host(`b"}
				}).Obj(),
			wantField: "spec.ingress.host",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := gina.Create(context.Background(), tc.obj)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantField) || !strings.Contains(err.Error(), "should match") {
				t.Errorf("err = %v, want invalid naming %s", err, tc.wantField)
			}
		})
	}
}
