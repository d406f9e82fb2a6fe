package tenant_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// tenantUser binds user in ns to each ClusterRole and returns a client
// that acts as that user.
func tenantUser(t *testing.T, ns, user string, roles ...string) client.Client {
	t.Helper()
	var c client.Client
	for _, role := range roles {
		// Wait for something this binding grants and the ones before did
		// not, or the next request may beat the authorizer's informer.
		granted := authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "agenttasks"}
		if role == "edit" || role == "admin" || role == "view" {
			granted = authorizationv1.ResourceAttributes{Verb: "get", Resource: "resourcequotas"}
		}
		var err error
		c, err = testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, user, role, granted)
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// tierReady waits until the namespace's tier quotas exist and the quota
// controller counts everything they limit (until then the quota admission
// refuses what they count; it finds the CRDs' counts on its discovery
// resync, up to 30s after they are installed).
func tierReady(t *testing.T, ns string) {
	t.Helper()
	testenv.EventuallyWithin(t, 90*time.Second, "the tier's quotas in "+ns, func(ctx context.Context) error {
		for _, name := range []string{schedv1.TierObjectName, schedv1.TierPriorityQuotaName} {
			q := &corev1.ResourceQuota{}
			if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, q); err != nil {
				return err
			}
			for r := range q.Spec.Hard {
				if _, ok := q.Status.Used[r]; !ok {
					return fmt.Errorf("quota %s does not count %s yet", name, r)
				}
			}
		}
		return nil
	})
}

// refused polls until creating obj (server dry run) is refused with every
// one of want, since policies take effect asynchronously.
func refused(t *testing.T, c client.Client, obj client.Object, want ...string) {
	t.Helper()
	testenv.EventuallyWithin(t, testenv.ShortTimeout, fmt.Sprintf("%T %s refused", obj, obj.GetName()), func(ctx context.Context) error {
		err := c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
		if err == nil {
			return fmt.Errorf("created")
		}
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			return fmt.Errorf("err = %v, want forbidden", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				return fmt.Errorf("err = %q, want it to say %q", err, w)
			}
		}
		return nil
	})
}

func allowed(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj.DeepCopyObject().(client.Object), client.DryRunAll); err != nil {
		t.Errorf("%T %s: %v, want it allowed", obj, obj.GetName(), err)
	}
}

func toleration(key string, op corev1.TolerationOperator, value string) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: op, Value: value, Effect: corev1.TaintEffectNoSchedule}
}

// TestTierBoundsPlacement tries, as a member of a free-tier tenant (made as
// `kubectl sched tenant create --user` makes one, plus the built-in edit
// role for pods), every way of asking for more than the tier allows: a
// higher priority, a node pool or taint of another tier, and tolerating
// every taint; through each kind and through a pod made directly.
func TestTierBoundsPlacement(t *testing.T) {
	const ns = "tier-bounds"
	tenantNamespace(t, ns, "free")
	tierReady(t, ns)
	mallory := tenantUser(t, ns, "mallory", "kubectl-sched-edit", "edit")
	task := func(p schedv1.Placement) *schedv1.AgentTask {
		return MakeAgentTask("t", ns).Image("busybox").Placement(p).Obj()
	}

	cases := map[string]struct {
		obj  client.Object
		want []string
	}{
		"task: priority Critical": {
			obj:  task(schedv1.Placement{Priority: schedv1.PriorityCritical}),
			want: []string{"spec.placement.priority Critical", "tier free allows placement.priority up to Low"},
		},
		"task: priority Medium": {
			obj:  task(schedv1.Placement{Priority: schedv1.PriorityMedium}),
			want: []string{"spec.placement.priority Medium", "up to Low"},
		},
		"task: the gpu pool": {
			obj:  task(schedv1.Placement{NodePools: []string{"general", "gpu"}}),
			want: []string{"spec.placement.nodePools [gpu]", "tier free allows the node pools: general"},
		},
		"task: tolerates every taint": {
			obj:  task(schedv1.Placement{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}),
			want: []string{"spec.placement.tolerations [no key (every taint)]", "tier free allows tolerating only the taints: none"},
		},
		"task: tolerates every pool": {
			obj:  task(schedv1.Placement{Tolerations: []corev1.Toleration{toleration(schedv1.TaintPool, corev1.TolerationOpExists, "")}}),
			want: []string{"spec.placement.tolerations [node.kubectl-sched.dev/pool]", "pool taints of its node pools (general)"},
		},
		"task: tolerates the gpu pool's taint": {
			obj:  task(schedv1.Placement{Tolerations: []corev1.Toleration{toleration(schedv1.TaintPool, corev1.TolerationOpEqual, "gpu")}}),
			want: []string{"spec.placement.tolerations [node.kubectl-sched.dev/pool=gpu]"},
		},
		"task: tolerates the GPU taint": {
			obj:  task(schedv1.Placement{Tolerations: []corev1.Toleration{toleration(schedv1.TaintGPU, corev1.TolerationOpExists, "")}}),
			want: []string{"spec.placement.tolerations [nvidia.com/gpu]"},
		},
		"task: spot": {
			obj:  task(schedv1.Placement{Spot: schedv1.SpotAllowed}),
			want: []string{"spec.placement.spot Allowed (taint node.kubectl-sched.dev/spot)", "tier free"},
		},
		"task: GPU workload": {
			obj:  task(schedv1.Placement{WorkloadType: schedv1.WorkloadGPU}),
			want: []string{"spec.placement.workloadType GPU (taint nvidia.com/gpu)"},
		},
		"workflow: a later step at High": {
			obj: MakeWorkflow("w", ns).Step("a", "busybox").StepTask("b", schedv1.AgentTaskSpec{
				Image: "busybox", Placement: &schedv1.Placement{Priority: schedv1.PriorityHigh},
			}).Obj(),
			want: []string{"spec.steps[b].task.placement.priority High", "tier free"},
		},
		"workflow: a step tolerating everything": {
			obj: MakeWorkflow("w", ns).StepTask("a", schedv1.AgentTaskSpec{
				Image: "busybox", Placement: &schedv1.Placement{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
			}).Obj(),
			want: []string{"spec.steps[a].task.placement.tolerations [no key (every taint)]"},
		},
		"workflow: a finally step at High, beside an approval step": {
			obj: MakeWorkflow("w", ns).Approval("gate", "").Step("a", "busybox").Finally("cleanup", schedv1.AgentTaskSpec{
				Image: "busybox", Placement: &schedv1.Placement{Priority: schedv1.PriorityHigh},
			}).Obj(),
			want: []string{"spec.finally[cleanup].task.placement.priority High", "tier free"},
		},
		"app: priority High": {
			obj: MakeUserDeployment("u", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).
				Placement(schedv1.Placement{Priority: schedv1.PriorityHigh}).Obj(),
			want: []string{"spec.placement.priority High", "tier free"},
		},
		"app: the highmem pool": {
			obj: MakeUserDeployment("u", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).
				Placement(schedv1.Placement{NodePools: []string{"highmem"}}).Obj(),
			want: []string{"spec.placement.nodePools [highmem]"},
		},
		"pod: tolerates every taint": {
			obj: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
				Spec: corev1.PodSpec{
					Containers:  []corev1.Container{{Name: "c", Image: "busybox"}},
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				},
			},
			want: []string{"spec.tolerations [no key (every taint)]", "tier free"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { refused(t, mallory, tc.obj, tc.want...) })
	}

	// What the tier allows still goes through.
	t.Run("allowed", func(t *testing.T) {
		allowed(t, mallory, task(schedv1.Placement{
			Priority: schedv1.PriorityLow, NodePools: []string{"general"},
			Tolerations: []corev1.Toleration{
				toleration(schedv1.TaintPool, corev1.TolerationOpEqual, "general"),
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		}))
		allowed(t, mallory, MakeWorkflow("w", ns).Step("a", "busybox").Obj())
		allowed(t, mallory, MakeWorkflow("w", ns).Approval("gate", "").Step("a", "busybox").
			Finally("cleanup", schedv1.AgentTaskSpec{Image: "busybox", Placement: &schedv1.Placement{Priority: schedv1.PriorityLow}}).Obj())
	})

	// Nor may an update raise it.
	t.Run("app: priority raised by update", func(t *testing.T) {
		app := MakeUserDeployment("raised", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).Obj()
		if err := mallory.Create(t.Context(), app); err != nil {
			t.Fatal(err)
		}
		app.Spec.Placement = &schedv1.Placement{Priority: schedv1.PriorityCritical}
		err := mallory.Update(t.Context(), app)
		if err == nil || !strings.Contains(err.Error(), "tier free allows placement.priority up to Low") {
			t.Errorf("update err = %v, want the priority refused", err)
		}
	})

	// A pod made directly with a class above the tier's is held by the
	// tier's priority quota; one at the tier's own class runs.
	t.Run("pod: a class above the tier", func(t *testing.T) {
		pod := func(name, class string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c", Image: "busybox",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
			}
		}
		for _, class := range []string{"kubectl-sched-critical", "kubectl-sched-medium", "system-cluster-critical"} {
			refused(t, mallory, pod("above", class), "exceeded quota: "+schedv1.TierPriorityQuotaName, "limited: pods=0")
		}
		allowed(t, mallory, pod("low", "kubectl-sched-low"))
		allowed(t, mallory, pod("none", ""))
	})
}

// TestTierBoundsNodeConditionTolerations tries, as a member of a free-tier
// tenant made by `kubectl sched tenant create` (plus the built-in edit
// role, for pods made directly), to tolerate Kubernetes' own node taints
// beyond what it gives every pod: unschedulable would put the tenant's pods
// on cordoned and draining nodes (and hold a scale-down), out-of-service
// on a node being fenced, not-ready as NoSchedule or unreachable for ever
// would keep them on a node that is gone. Only not-ready and unreachable,
// NoExecute, for at most the tier's 300s pass, which is what the API
// server adds to every pod itself.
func TestTierBoundsNodeConditionTolerations(t *testing.T) {
	const ns = "tier-conditions"
	mallory := testenv.Tenant(t, sim, ns, "free", "mallory", 2*time.Minute)
	if _, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, "mallory", "edit",
		authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods"}); err != nil {
		t.Fatal(err)
	}
	tol := func(key string, effect corev1.TaintEffect, seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect, TolerationSeconds: seconds}
	}
	task := func(ts ...corev1.Toleration) *schedv1.AgentTask {
		return MakeAgentTask("t", ns).Image("busybox").Placement(schedv1.Placement{Tolerations: ts}).Obj()
	}
	// Restricted, as the tenant's namespace enforces.
	pod := func(ts ...corev1.Toleration) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
			Spec: corev1.PodSpec{SecurityContext: podsecurity.Pod(), Tolerations: ts,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: podsecurity.Container(nil)}}},
		}
	}
	const allows = "tier free allows tolerating only the taints: none (and node.kubernetes.io/not-ready and unreachable as NoExecute for at most 300s)"
	cases := map[string]struct {
		obj  client.Object
		want []string
	}{
		"task: a cordoned node": {
			obj:  task(tol("node.kubernetes.io/unschedulable", corev1.TaintEffectNoSchedule, nil)),
			want: []string{"spec.placement.tolerations [node.kubernetes.io/unschedulable:NoSchedule]", allows},
		},
		"task: a node out of service": {
			obj:  task(tol("node.kubernetes.io/out-of-service", corev1.TaintEffectNoExecute, nil)),
			want: []string{"spec.placement.tolerations [node.kubernetes.io/out-of-service:NoExecute]"},
		},
		"task: every effect of not-ready": {
			obj:  task(tol("node.kubernetes.io/not-ready", "", nil)),
			want: []string{"spec.placement.tolerations [node.kubernetes.io/not-ready (every effect)]"},
		},
		"task: scheduled onto a node that is not ready": {
			obj:  task(tol("node.kubernetes.io/not-ready", corev1.TaintEffectNoSchedule, nil)),
			want: []string{"spec.placement.tolerations [node.kubernetes.io/not-ready:NoSchedule]"},
		},
		"task: an unreachable node for ever": {
			obj:  task(tol("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute, nil)),
			want: []string{"spec.placement.tolerations [node.kubernetes.io/unreachable:NoExecute]"},
		},
		"task: an unreachable node for an hour": {
			obj:  task(tol("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute, ptr.To[int64](3600))),
			want: []string{"spec.placement.tolerations [node.kubernetes.io/unreachable:NoExecute for 3600s]"},
		},
		"task: a node short of memory": {
			obj:  task(tol("node.kubernetes.io/memory-pressure", corev1.TaintEffectNoSchedule, nil)),
			want: []string{"spec.placement.tolerations [node.kubernetes.io/memory-pressure:NoSchedule]"},
		},
		"workflow: a step on cordoned nodes": {
			obj: MakeWorkflow("w", ns).StepTask("a", schedv1.AgentTaskSpec{Image: "busybox", Placement: &schedv1.Placement{
				Tolerations: []corev1.Toleration{tol("node.kubernetes.io/unschedulable", corev1.TaintEffectNoSchedule, nil)}}}).Obj(),
			want: []string{"spec.steps[a].task.placement.tolerations [node.kubernetes.io/unschedulable:NoSchedule]"},
		},
		"schedule: its runs on cordoned nodes": {
			obj: MakeCronWorkflow("c", ns, "0 * * * *").StepTask("a", schedv1.AgentTaskSpec{Image: "busybox", Placement: &schedv1.Placement{
				Tolerations: []corev1.Toleration{tol("node.kubernetes.io/unschedulable", corev1.TaintEffectNoSchedule, nil)}}}).Obj(),
			want: []string{"spec.workflowSpec.steps[a].task.placement.tolerations [node.kubernetes.io/unschedulable:NoSchedule]"},
		},
		"app: on cordoned nodes": {
			obj: MakeUserDeployment("u", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).
				Placement(schedv1.Placement{Tolerations: []corev1.Toleration{tol("node.kubernetes.io/unschedulable", corev1.TaintEffectNoSchedule, nil)}}).Obj(),
			want: []string{"spec.placement.tolerations [node.kubernetes.io/unschedulable:NoSchedule]"},
		},
		"pod: on cordoned nodes": {
			obj:  pod(tol("node.kubernetes.io/unschedulable", corev1.TaintEffectNoSchedule, nil)),
			want: []string{"spec.tolerations [node.kubernetes.io/unschedulable:NoSchedule]", allows},
		},
		"pod: on a node that is gone, for ever": {
			obj:  pod(tol("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute, nil)),
			want: []string{"spec.tolerations [node.kubernetes.io/unreachable:NoExecute]"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { refused(t, mallory, tc.obj, tc.want...) })
	}

	// What the API server gives every pod itself passes: a pod without
	// tolerations gets them (300s), one that names them within the bound
	// keeps them.
	t.Run("allowed", func(t *testing.T) {
		k8s := []corev1.Toleration{
			tol("node.kubernetes.io/not-ready", corev1.TaintEffectNoExecute, ptr.To[int64](300)),
			tol("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute, ptr.To[int64](60)),
		}
		allowed(t, mallory, task(k8s...))
		allowed(t, mallory, pod(k8s...))
		allowed(t, mallory, pod())
	})
}

// TestTierLimitsCannotBeLoosenedByTheTenant: the policy trusts the
// annotations of the tier's ResourceQuota, so a namespace admin must not be
// able to write ResourceQuotas (nor LimitRanges) of their namespace.
func TestTierLimitsCannotBeLoosenedByTheTenant(t *testing.T) {
	const ns = "tier-loosen"
	tenantNamespace(t, ns, "free")
	tierReady(t, ns)
	for _, role := range []string{"edit", "admin"} {
		t.Run(role, func(t *testing.T) {
			user := "owner-" + role
			c := tenantUser(t, ns, user, "kubectl-sched-edit", role)
			for _, resource := range []string{"resourcequotas", "limitranges"} {
				for _, verb := range []string{"create", "update", "patch", "delete"} {
					review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
						ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource}}}
					if err := sim.Client.Create(t.Context(), review); err != nil {
						t.Fatal(err)
					}
					if review.Status.Allowed {
						t.Errorf("%s may %s %s", role, verb, resource)
					}
				}
			}
			q := &corev1.ResourceQuota{}
			if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: schedv1.TierObjectName}, q); err != nil {
				t.Fatalf("a tenant should read its quota: %v", err)
			}
			q.Annotations[schedv1.AnnotationTierMaxPriority] = string(schedv1.PriorityCritical)
			if err := c.Update(t.Context(), q); !apierrors.IsForbidden(err) {
				t.Errorf("raising the tier's priority: err = %v, want forbidden", err)
			}
			if err := c.Delete(t.Context(), q); !apierrors.IsForbidden(err) {
				t.Errorf("deleting the tier's quota: err = %v, want forbidden", err)
			}
		})
	}
}

// TestNamespacesWithoutATierAreNotBounded: the policy matches tenant
// namespaces only.
func TestNamespacesWithoutATierAreNotBounded(t *testing.T) {
	ns := testenv.Namespace(t, sim.Client)
	allowed(t, sim.Client, MakeAgentTask("t", ns).Image("busybox").Placement(schedv1.Placement{
		Priority: schedv1.PriorityCritical, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
	}).Obj())
}

// TestTenantWithoutItsQuotaIsRefused: a tenant namespace whose tier is not
// defined has no quota to read limits from, and is refused rather than
// unbounded.
func TestTenantWithoutItsQuotaIsRefused(t *testing.T) {
	const ns = "tier-undefined"
	tenantNamespace(t, ns, "platinum")
	refused(t, sim.Client, MakeAgentTask("t", ns).Image("busybox").Obj(), "no params found")
}

// TestTierBoundsTTL tries, as a member of a free-tier tenant, to keep
// finished runs longer than the tier allows (24h): a task or a workflow
// asking more, and a task raising its TTL by update. Finished runs count
// against the tier's count/ quotas, so a long TTL would jam the namespace.
func TestTierBoundsTTL(t *testing.T) {
	const ns = "tier-ttl"
	tenantNamespace(t, ns, "free")
	tierReady(t, ns)
	mallory := tenantUser(t, ns, "mallory", "kubectl-sched-edit")
	week := &metav1.Duration{Duration: 168 * time.Hour}

	task := MakeAgentTask("t", ns).Image("busybox").Obj()
	task.Spec.TTLAfterFinished = week
	refused(t, mallory, task, "spec.ttlAfterFinished 168h0m0s: tier free keeps finished tasks at most 24h", "leave it out to get the tier's default, 15m")

	wf := MakeWorkflow("w", ns).Step("a", "busybox").Obj()
	wf.Spec.TTLAfterFinished = week
	refused(t, mallory, wf, "tier free keeps finished workflows at most 24h")

	t.Run("within the maximum", func(t *testing.T) {
		ok := task.DeepCopy()
		ok.Spec.TTLAfterFinished = &metav1.Duration{Duration: 24 * time.Hour}
		allowed(t, mallory, ok)
		allowed(t, mallory, MakeWorkflow("w", ns).Step("a", "busybox").Obj())
	})

	t.Run("raised by update", func(t *testing.T) {
		short := MakeAgentTask("short", ns).Image("busybox").Obj()
		short.Spec.TTLAfterFinished = &metav1.Duration{Duration: time.Hour}
		if err := mallory.Create(t.Context(), short); err != nil {
			t.Fatal(err)
		}
		short.Spec.TTLAfterFinished = week
		if err := mallory.Update(t.Context(), short); err == nil || !strings.Contains(err.Error(), "tier free keeps finished tasks at most 24h") {
			t.Errorf("update err = %v, want the TTL refused", err)
		}
	})

	t.Run("without a tier", func(t *testing.T) {
		other := testenv.Namespace(t, sim.Client)
		long := MakeAgentTask("t", other).Image("busybox").Obj()
		long.Spec.TTLAfterFinished = &metav1.Duration{Duration: 8760 * time.Hour}
		allowed(t, sim.Client, long)
	})
}
