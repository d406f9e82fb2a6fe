package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// bound is one limit of the API: build(n) makes an object whose bounded
// field holds n (characters or entries).
type bound struct {
	limit     int
	build     func(ns string, n int) client.Object
	wantField string
	wantMsg   string
	admin     bool // cluster-scoped: only an admin may create it
}

func bounds() map[string]bound {
	task := func(ns string, edit func(*schedv1.AgentTaskSpec)) client.Object {
		return MakeAgentTask("t", ns).Image("busybox").Spec(edit).Obj()
	}
	app := func(ns string, edit func(*schedv1.ServiceSpec)) client.Object {
		return MakeUserDeployment("a", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).EditService("web", edit).Obj()
	}
	allow := func(ns string, edit func(*schedv1.AllowFrom)) client.Object {
		a := &schedv1.AllowFrom{}
		edit(a)
		return MakeUserDeployment("a", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).
			Spec(func(s *schedv1.UserDeploymentSpec) { s.AllowFrom = a }).Obj()
	}
	keys := func(n int, format string) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf(format, i)] = "v"
		}
		return m
	}
	return map[string]bound{
		"at: a pod annotation's value": {8192, func(ns string, n int) client.Object {
			return MakeAgentTask("t", ns).Image("busybox").PodAnnotation("k", strings.Repeat("v", n)).Obj()
		}, "spec.podMetadata.annotations", "values 8192", false},
		"at: pod annotations": {32, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) { s.PodMetadata = &schedv1.PodMetadata{Annotations: keys(n, "a%d")} })
		}, "spec.podMetadata.annotations", "at most 32", false},
		"at: a pod label's key": {317, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) {
				s.PodMetadata = &schedv1.PodMetadata{Labels: map[string]string{strings.Repeat("k", n): "v"}}
			})
		}, "spec.podMetadata.labels", "at most 317 characters", false},
		"at: a pod label's value": {63, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) {
				s.PodMetadata = &schedv1.PodMetadata{Labels: map[string]string{"k": strings.Repeat("v", n)}}
			})
		}, "spec.podMetadata.labels", "values 63", false},
		"at: resource limits": {16, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) {
				s.Resources.Limits = corev1.ResourceList{}
				for i := range n {
					s.Resources.Limits[corev1.ResourceName(fmt.Sprintf("example.com/r%d", i))] = resource.MustParse("1")
				}
			})
		}, "spec.resources.limits", "at most 16", false},
		"at: a quantity's length": {64, func(ns string, n int) client.Object {
			// Built as JSON: a Quantity would marshal to its short form.
			return withField(task(ns, func(*schedv1.AgentTaskSpec) {}), "1"+strings.Repeat("0", n-1), "spec", "resources", "requests", "cpu")
		}, "spec.resources.requests", "quantities 64", false},
		"at: capabilities to drop": {64, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) {
				s.SecurityContext = &schedv1.SecurityContext{Capabilities: &schedv1.Capabilities{}}
				for i := range n {
					s.SecurityContext.Capabilities.Drop = append(s.SecurityContext.Capabilities.Drop, corev1.Capability(fmt.Sprintf("CAP_%d", i)))
				}
			})
		}, "spec.securityContext.capabilities.drop", "at most 64", false},
		"at: a capability's name": {64, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) {
				s.SecurityContext = &schedv1.SecurityContext{Capabilities: &schedv1.Capabilities{Drop: []corev1.Capability{corev1.Capability(strings.Repeat("C", n))}}}
			})
		}, "spec.securityContext.capabilities.drop", "at most 64 characters", false},
		"at: a seccomp localhost profile": {4096, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) {
				s.SecurityContext = &schedv1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To(strings.Repeat("p", n))}}
			})
		}, "spec.securityContext.seccompProfile", "localhostProfile 4096", false},
		"at: a toleration's value": {63, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) {
				s.Placement = &schedv1.Placement{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpEqual, Value: strings.Repeat("v", n)}}}
			})
		}, "spec.placement.tolerations", "its value 63", false},
		"at: a ConfigMap key an env var reads": {253, func(ns string, n int) client.Object {
			return task(ns, func(s *schedv1.AgentTaskSpec) {
				s.Env = []schedv1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: strings.Repeat("k", n)}}}}
			})
		}, "spec.env[0].valueFrom.configMapKeyRef", "at most 253 characters", false},
		"at: an env var's resource divisor": {64, func(ns string, n int) client.Object {
			obj := task(ns, func(s *schedv1.AgentTaskSpec) {
				s.Env = []schedv1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}}}
			})
			u := toUnstructured(obj)
			env, _, _ := unstructured.NestedSlice(u.Object, "spec", "env")
			_ = unstructured.SetNestedField(env[0].(map[string]any), "1"+strings.Repeat("0", n-1), "valueFrom", "resourceFieldRef", "divisor")
			_ = unstructured.SetNestedSlice(u.Object, env, "spec", "env")
			return u
		}, "spec.env[0].valueFrom.resourceFieldRef", "divisor 64", false},
		"at: a timeout's length": {32, func(ns string, n int) client.Object {
			// "1s" or "10s", then "0ms" until n characters: always 1s or 10s.
			head := "1s"
			if n%3 == 0 {
				head = "10s"
			}
			return withField(task(ns, func(*schedv1.AgentTaskSpec) {}), head+strings.Repeat("0ms", (n-len(head))/3), "spec", "timeout")
		}, "spec.timeout", "32", false},
		"wf: a forEach step's items": {100, func(ns string, n int) client.Object {
			return MakeWorkflow("w", ns).Step("a", "busybox", "${item}").ForEach(make([]string, n), "", 0).Obj()
		}, "spec.steps[0].forEach.items", "at most 100 items", false},
		"wf: a forEach item": {1024, func(ns string, n int) client.Object {
			return MakeWorkflow("w", ns).Step("a", "busybox", "${item}").ForEach([]string{strings.Repeat("i", n)}, "", 0).Obj()
		}, "spec.steps[0].forEach.items[0]", "1024", false},
		"wf: an approval's users": {schedv1.MaxApprovers, func(ns string, n int) client.Object {
			return MakeWorkflow("w", ns).Approval("gate", "").Approvers(names("u", n), nil).Step("a", "busybox").Obj()
		}, "spec.steps[0].approval.approvers.users", "at most 16 items", false},
		"wf: an approval's groups": {schedv1.MaxApprovers, func(ns string, n int) client.Object {
			return MakeWorkflow("w", ns).Approval("gate", "").Approvers(nil, names("g", n)).Step("a", "busybox").Obj()
		}, "spec.steps[0].approval.approvers.groups", "at most 16 items", false},
		"wf: an approver's user name": {256, func(ns string, n int) client.Object {
			return MakeWorkflow("w", ns).Approval("gate", "").Approvers([]string{strings.Repeat("u", n)}, nil).Step("a", "busybox").Obj()
		}, "spec.steps[0].approval.approvers.users[0]", "256", false},
		"wf: an approvers' group name": {256, func(ns string, n int) client.Object {
			return MakeWorkflow("w", ns).Approval("gate", "").Approvers(nil, []string{strings.Repeat("g", n)}).Step("a", "busybox").Obj()
		}, "spec.steps[0].approval.approvers.groups[0]", "256", false},
		"wf: a step's pod annotation": {8192, func(ns string, n int) client.Object {
			return MakeWorkflow("w", ns).StepTask("a", schedv1.AgentTaskSpec{Image: "busybox",
				PodMetadata: &schedv1.PodMetadata{Annotations: map[string]string{"k": strings.Repeat("v", n)}}}).Obj()
		}, "spec.steps[0].task.podMetadata.annotations", "values 8192", false},
		"ud: a config value": {8192, func(ns string, n int) client.Object {
			return MakeUserDeployment("a", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).Config("K", strings.Repeat("v", n)).Obj()
		}, "spec.config", "values 8192", false},
		"ud: a service's argument": {4096, func(ns string, n int) client.Object {
			return app(ns, func(s *schedv1.ServiceSpec) { s.Args = []string{strings.Repeat("a", n)} })
		}, "spec.services[0].args[0]", "4096", false},
		"ud: a probe's command": {64, func(ns string, n int) client.Object {
			return app(ns, func(s *schedv1.ServiceSpec) {
				s.ReadinessProbe = &schedv1.Probe{Exec: &schedv1.ExecAction{Command: make([]string, n)}}
			})
		}, "spec.services[0].readinessProbe.exec.command", "at most 64", false},
		"ud: a probe's header value": {4096, func(ns string, n int) client.Object {
			return app(ns, func(s *schedv1.ServiceSpec) {
				s.LivenessProbe = &schedv1.Probe{HTTPGet: &schedv1.HTTPGetAction{Port: intstr.FromString("http"),
					HTTPHeaders: []corev1.HTTPHeader{{Name: "X", Value: strings.Repeat("v", n)}}}}
			})
		}, "spec.services[0].livenessProbe.httpGet.httpHeaders", "values 4096", false},
		"ud: a volume's size": {64, func(ns string, n int) client.Object {
			obj := app(ns, func(s *schedv1.ServiceSpec) {
				s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("1Gi"), MountPath: "/data"}}
			})
			u := toUnstructured(obj)
			svcs, _, _ := unstructured.NestedSlice(u.Object, "spec", "services")
			vols, _, _ := unstructured.NestedSlice(svcs[0].(map[string]any), "volumes")
			vols[0].(map[string]any)["size"] = "1" + strings.Repeat("0", n-1)
			_ = unstructured.SetNestedSlice(svcs[0].(map[string]any), vols, "volumes")
			_ = unstructured.SetNestedSlice(u.Object, svcs, "spec", "services")
			return u
		}, "spec.services[0].volumes[0].size", "at most 64 characters", false},
		"ud: an image pull secret's name": {253, func(ns string, n int) client.Object {
			return app(ns, func(s *schedv1.ServiceSpec) {
				s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: strings.Repeat("p", n)}}
			})
		}, "spec.services[0].imagePullSecrets", "at most 253 characters", false},
		"ud: allowFrom apps": {16, func(ns string, n int) client.Object {
			return allow(ns, func(a *schedv1.AllowFrom) {
				for i := range n {
					a.Apps = append(a.Apps, fmt.Sprintf("app-%d", i))
				}
			})
		}, "spec.allowFrom.apps", "must have at most 16 items", false},
		"ud: allowFrom namespace selectors": {8, func(ns string, n int) client.Object {
			return allow(ns, func(a *schedv1.AllowFrom) {
				for i := range n {
					a.Namespaces = append(a.Namespaces, schedv1.NamespaceLabels{MatchLabels: map[string]string{"team": fmt.Sprint(i)}})
				}
			})
		}, "spec.allowFrom.namespaces", "must have at most 8 items", false},
		"ud: an allowFrom namespace selector's labels": {8, func(ns string, n int) client.Object {
			return allow(ns, func(a *schedv1.AllowFrom) { a.Namespaces = []schedv1.NamespaceLabels{{MatchLabels: keys(n, "l%d")}} })
		}, "spec.allowFrom.namespaces[0].matchLabels", "at most 8", false},
		"ud: an allowFrom namespace label's value": {63, func(ns string, n int) client.Object {
			return allow(ns, func(a *schedv1.AllowFrom) {
				a.Namespaces = []schedv1.NamespaceLabels{{MatchLabels: map[string]string{"team": strings.Repeat("v", n)}}}
			})
		}, "spec.allowFrom.namespaces[0].matchLabels", "values 63", false},
		"ud: allowFrom metrics ports": {4, func(ns string, n int) client.Object {
			return allow(ns, func(a *schedv1.AllowFrom) {
				for i := range n {
					a.MetricsPorts = append(a.MetricsPorts, int32(9090+i))
				}
			})
		}, "spec.allowFrom.metricsPorts", "must have at most 4 items", false},
		"cwf: the schedule": {128, func(ns string, n int) client.Object {
			// A minute list of n-8 characters: 00,0,0... or 0,0,0...
			m := n - len(" * * * *")
			minute := "0" + strings.Repeat(",0", (m-1)/2)
			if m%2 == 0 {
				minute = "00" + strings.Repeat(",0", (m-2)/2)
			}
			return MakeCronWorkflow("c", ns, minute+" * * * *").Step("a", "busybox").Obj()
		}, "spec.schedule", "may not be more than 128", false},
		"cwf: the time zone": {64, func(ns string, n int) client.Object {
			return MakeCronWorkflow("c", ns, "@daily").TimeZone("Europe/"+strings.Repeat("z", n-len("Europe/"))).Step("a", "busybox").Obj()
		}, "spec.timeZone", "may not be more than 64", false},
		"cwf: the name": {45, func(ns string, n int) client.Object {
			return MakeCronWorkflow(strings.Repeat("c", n), ns, "@daily").Step("a", "busybox").Obj()
		}, "metadata.name", "at most 45 characters", false},
		"cwf: succeeded runs kept": {100, func(ns string, n int) client.Object {
			return MakeCronWorkflow("c", ns, "@daily").History(int32(n), 1).Step("a", "busybox").Obj()
		}, "spec.successfulRunsHistoryLimit", "less than or equal to 100", false},
		"scx: a node selector value": {63, func(_ string, n int) client.Object {
			return MakeSchedExt("s").Scheduler("scx_lavd").NodeSelector("k", strings.Repeat("v", n)).Obj()
		}, "spec.nodeSelector", "values 63", true},
		"scx: a toleration's key": {317, func(_ string, n int) client.Object {
			return MakeSchedExt("s").Scheduler("scx_lavd").Toleration(corev1.Toleration{Key: strings.Repeat("k", n), Operator: corev1.TolerationOpExists}).Obj()
		}, "spec.tolerations", "key may have at most 317", true},
	}
}

// names are n distinct names: prefix0, prefix1, ...
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// TestTenantCannotCreateOversizeObjects: every list, map and string of the
// five kinds is bounded, inside the core/v1 types they embed too, so a
// namespace user cannot make the operator cache, copy and write objects of
// any size. Each bound is tried at its limit (accepted) and one past it
// (refused, naming the field).
func TestTenantCannotCreateOversizeObjects(t *testing.T) {
	// Opted out of the restricted-pods policy, so that security contexts
	// are judged by their size alone.
	ivan := tenant(t, "tenant-ivan", "ivan", map[string]string{optOutLabel: "true"})
	for name, b := range bounds() {
		t.Run(name, func(t *testing.T) {
			c := ivan
			if b.admin {
				c = env.Client
			}
			ctx := context.Background()
			if err := c.Create(ctx, b.build("tenant-ivan", b.limit), client.DryRunAll); err != nil {
				t.Errorf("at the limit (%d): refused: %v", b.limit, err)
			}
			err := c.Create(ctx, b.build("tenant-ivan", b.limit+1), client.DryRunAll)
			switch {
			case err == nil:
				t.Fatalf("past the limit (%d): accepted; want it refused on %s", b.limit+1, b.wantField)
			case !apierrors.IsInvalid(err):
				t.Fatalf("past the limit: want an Invalid error, got %v", err)
			case !strings.Contains(err.Error(), b.wantField) || !strings.Contains(err.Error(), b.wantMsg):
				t.Errorf("past the limit: message does not name %q with %q:\n%s", b.wantField, b.wantMsg, err)
			}
		})
	}
}

// TestIntegerQuantitiesAccepted: quantities may be written as numbers
// (cpu: 1), which the length rules must let through.
func TestIntegerQuantitiesAccepted(t *testing.T) {
	u := toUnstructured(MakeAgentTask("t", ns).Image("busybox").Obj())
	_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "resources", "limits", "cpu")
	if err := env.Client.Create(context.Background(), u, client.DryRunAll); err != nil {
		t.Errorf("cpu: 1 refused: %v", err)
	}
	ud := toUnstructured(validApp().EditService("web", func(s *schedv1.ServiceSpec) {
		s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("1Gi"), MountPath: "/data"}}
		s.ReadinessProbe = &schedv1.Probe{HTTPGet: &schedv1.HTTPGetAction{Port: intstr.FromInt32(80)}}
	}).Obj())
	svcs, _, _ := unstructured.NestedSlice(ud.Object, "spec", "services")
	svcs[0].(map[string]any)["volumes"].([]any)[0].(map[string]any)["size"] = int64(1073741824)
	_ = unstructured.SetNestedSlice(ud.Object, svcs, "spec", "services")
	if err := env.Client.Create(context.Background(), ud, client.DryRunAll); err != nil {
		t.Errorf("size: 1073741824 and port: 80 refused: %v", err)
	}
}

// TestLargestAgentTaskAccepted creates an AgentTask with every bound at
// its limit, as a namespace user: the bounds agree with each other and the
// CEL rules stay within their runtime cost on the largest object. Its size
// is the largest AgentTask spec there can be (docs/admins/security.md).
func TestLargestAgentTaskAccepted(t *testing.T) {
	jane := tenant(t, "tenant-jane", "jane", map[string]string{optOutLabel: "true"})
	task := &schedv1.AgentTask{Spec: largestTaskSpec()}
	task.Name, task.Namespace = "largest", "tenant-jane"
	if err := jane.Create(context.Background(), task, client.DryRunAll); err != nil {
		t.Fatalf("the largest AgentTask was refused: %v", err)
	}
	data, err := json.Marshal(task.Spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("largest AgentTask spec: %d bytes (%.0f KiB)", len(data), float64(len(data))/1024)
	// A Workflow step holds the same spec.
	wf := MakeWorkflow("largest", "tenant-jane").StepTask("a", largestTaskSpec()).Obj()
	if err := jane.Create(context.Background(), wf, client.DryRunAll); err != nil {
		t.Fatalf("a workflow with the largest step was refused: %v", err)
	}
}

// TestLargestObjectSizes logs what the bounds let each kind hold (docs/admins/security.md): the largest SchedExt is created (as an admin: it is
// cluster-scoped); a UserDeployment's largest service alone, and 32 of the
// largest workflow steps, are past the API server's own limit on a stored
// object (1.5 MiB by default), which is then what bounds those two kinds.
func TestLargestObjectSizes(t *testing.T) {
	s := strings.Repeat
	id := func(prefix string, i, n int) string {
		p := fmt.Sprintf("%s%d-", prefix, i)
		return p + s("x", n-len(p))
	}
	task := largestTaskSpec()
	scx := MakeSchedExt("largest").Image(s("i", 512), s("o", 63)).Obj()
	scx.Spec.Resources, scx.Spec.PodMetadata, scx.Spec.Tolerations = task.Resources, task.PodMetadata, task.Placement.Tolerations
	scx.Spec.NodeSelector = map[string]string{}
	for i := range 16 {
		scx.Spec.NodeSelector[id("n", i, 317)] = s("v", 63)
	}
	for i := range 64 {
		scx.Spec.Args = append(scx.Spec.Args, s("a", 1024))
		scx.Spec.Env = append(scx.Spec.Env, task.Env[i])
	}
	for i := range 8 {
		scx.Spec.ImagePullSecrets = append(scx.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: id("p", i, 253)})
	}
	if err := env.Client.Create(context.Background(), scx, client.DryRunAll); err != nil {
		t.Fatalf("the largest SchedExt was refused: %v", err)
	}
	svc := schedv1.ServiceSpec{Name: s("s", 40), Image: s("i", 512), Resources: task.Resources, PodMetadata: task.PodMetadata, SecurityContext: task.SecurityContext}
	for range 256 {
		svc.Args = append(svc.Args, s("a", 4096))
	}
	for i := range 128 {
		svc.Env = append(svc.Env, schedv1.EnvVar{Name: id("E", i, 128), Value: s("v", 4096)})
	}
	for range 64 {
		svc.Command = append(svc.Command, s("c", 4096))
	}
	size := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d bytes (%.2f MiB)", len(data), float64(len(data))/(1<<20))
	}
	t.Logf("largest SchedExt spec: %s", size(scx.Spec))
	t.Logf("largest AgentTask spec, and Workflow step: %s; 32 steps: %.1f MiB", size(task), 32*float64(len(mustJSON(t, task)))/(1<<20))
	t.Logf("largest UserDeployment service: %s", size(svc))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// largestTaskSpec fills every list, map and string of an AgentTask spec.
func largestTaskSpec() schedv1.AgentTaskSpec { return LargestTaskSpec() }

func toUnstructured(obj client.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// withField returns obj as unstructured with the string value at path.
func withField(obj client.Object, value string, path ...string) *unstructured.Unstructured {
	u := toUnstructured(obj)
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		panic(err)
	}
	return u
}

// TestMirrorsKeepEveryCoreField: the bounded mirrors of core/v1 types have
// every field of the original (but resource claims, which are refused), so
// a Kubernetes upgrade that adds one fails here instead of being dropped
// silently; and Core converts without losing any.
func TestMirrorsKeepEveryCoreField(t *testing.T) {
	for _, m := range []struct {
		mirror, core any
		except       []string
	}{
		{schedv1.SecurityContext{}, corev1.SecurityContext{}, nil},
		{schedv1.Capabilities{}, corev1.Capabilities{}, nil},
		{schedv1.Probe{}, corev1.Probe{}, nil},
		{schedv1.ExecAction{}, corev1.ExecAction{}, nil},
		{schedv1.HTTPGetAction{}, corev1.HTTPGetAction{}, nil},
		{schedv1.ResourceRequirements{}, corev1.ResourceRequirements{}, []string{"claims"}},
	} {
		got, want := jsonFields(reflect.TypeOf(m.mirror)), jsonFields(reflect.TypeOf(m.core))
		for _, f := range m.except {
			delete(want, f)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T does not mirror %T (-core +mirror):\n%s", m.mirror, m.core, diff)
		}
	}

	spec := largestTaskSpec()
	spec.SecurityContext.Privileged, spec.SecurityContext.RunAsUser, spec.SecurityContext.ProcMount = ptr.To(true), ptr.To[int64](7), ptr.To(corev1.DefaultProcMount)
	probe := &schedv1.Probe{
		Exec:      &schedv1.ExecAction{Command: []string{"true"}},
		HTTPGet:   &schedv1.HTTPGetAction{Path: "/", Port: intstr.FromString("http"), Host: "h", Scheme: corev1.URISchemeHTTPS, HTTPHeaders: []corev1.HTTPHeader{{Name: "a", Value: "b"}}},
		TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}, GRPC: &corev1.GRPCAction{Port: 2, Service: ptr.To("s")},
		InitialDelaySeconds: 1, TimeoutSeconds: 2, PeriodSeconds: 3, SuccessThreshold: 4, FailureThreshold: 5, TerminationGracePeriodSeconds: ptr.To[int64](6),
	}
	for _, c := range []struct{ mirror, core any }{
		{spec.SecurityContext, spec.SecurityContext.Core()},
		{spec.Resources, spec.Resources.Core()},
		{probe, probe.Core()},
	} {
		a, _ := json.Marshal(c.mirror)
		b, _ := json.Marshal(c.core)
		if string(a) != string(b) {
			t.Errorf("%T.Core() changed the object:\n%s\n%s", c.mirror, a, b)
		}
	}
}

// jsonFields lists a struct's JSON field names, inline structs flattened.
func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			maps.Copy(out, jsonFields(f.Type))
			continue
		}
		out[name] = true
	}
	return out
}
