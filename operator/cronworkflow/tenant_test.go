package cronworkflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

func createIn(ns string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: schedv1.GroupName, Resource: "cronworkflows"}
}

// TestTenantGetsNoMoreThanWithWorkflows: tess, a member of a namespace of
// the free tier (bound to kubectl-sched-tenant), may schedule a workflow
// there and the operator runs it there; but whatever she may not put in a
// Workflow she may not put in a CronWorkflow either, refused by the same
// policy when she writes it; a run the tier comes to refuse later is
// refused when the operator creates it; and who may not create Workflows
// may not write a CronWorkflow.
func TestTenantGetsNoMoreThanWithWorkflows(t *testing.T) {
	ctx := context.Background()
	ns := testenv.TierNamespace(t, env.Client, "free", "15m", "1h")
	tess, err := testenv.BindUser(ctx, env.Client, env.Config, ns, "tess", "kubectl-sched-tenant", createIn(ns))
	if err != nil {
		t.Fatal(err)
	}

	step := func(edit func(*schedv1.AgentTaskSpec)) schedv1.WorkflowSpec {
		s := schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{{Name: "build", Task: schedv1.AgentTaskSpec{Image: "busybox"}}}}
		if edit != nil {
			edit(&s.Steps[0].Task)
		}
		return s
	}
	refused := map[string]struct {
		spec schedv1.WorkflowSpec
		// words the refusal of the Workflow holds; the CronWorkflow's holds
		// them too, at spec.workflowSpec.
		want string
	}{
		"a privileged step": {step(func(s *schedv1.AgentTaskSpec) {
			s.SecurityContext = &schedv1.SecurityContext{Privileged: ptr.To(true)}
		}), "privileged containers are not allowed here"},
		"a priority above the tier's": {step(func(s *schedv1.AgentTaskSpec) {
			s.Placement = &schedv1.Placement{Priority: schedv1.PriorityHigh}
		}), "tier free allows placement.priority up to Low"},
		"a node pool the tier does not allow": {step(func(s *schedv1.AgentTaskSpec) {
			s.Placement = &schedv1.Placement{NodePools: []string{"gpu"}}
		}), "tier free allows the node pools: none"},
		"a TTL past the tier's": {func() schedv1.WorkflowSpec {
			s := step(nil)
			s.TTLAfterFinished = &metav1.Duration{Duration: 2 * time.Hour}
			return s
		}(), "tier free keeps finished workflows at most 1h"},
		"a reference to a later step": {func() schedv1.WorkflowSpec {
			s := step(func(s *schedv1.AgentTaskSpec) { s.Args = []string{"${steps.ship.output.x}"} })
			s.Steps = append(s.Steps, schedv1.WorkflowStep{Name: "ship", Task: schedv1.AgentTaskSpec{Image: "busybox"}})
			return s
		}(), "a step may only use the outputs of steps before it"},
	}
	for name, tc := range refused {
		t.Run("refused: "+name, func(t *testing.T) {
			wf := MakeWorkflow("w", ns).Obj()
			wf.Spec = tc.spec
			if err := tess.Create(ctx, wf, client.DryRunAll); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("the Workflow: err = %v, want it refused saying %q", err, tc.want)
			}
			cw := MakeCronWorkflow("c", ns, "0 * * * *").Spec(func(s *schedv1.CronWorkflowSpec) { s.WorkflowSpec = tc.spec }).Obj()
			err := tess.Create(ctx, cw, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spec.workflowSpec") {
				t.Errorf("the CronWorkflow: err = %v, want it refused saying %q at spec.workflowSpec", err, tc.want)
			}
		})
	}

	// What she may do, the operator does for her, in her namespace.
	at := startClock()
	cw := MakeCronWorkflow("nightly", ns, "0 * * * *").Spec(func(s *schedv1.CronWorkflowSpec) {
		s.WorkflowSpec = step(nil)
		s.WorkflowSpec.TTLAfterFinished = &metav1.Duration{Duration: 50 * time.Minute}
	}).Obj()
	if err := tess.Create(ctx, cw); err != nil {
		t.Fatalf("tess may not schedule a workflow in her namespace: %v", err)
	}
	tick(t, cw, at)
	name := names.CronRun("nightly", at)
	waitRuns(t, cw, "the first run", func(r map[string]*schedv1.Workflow) bool { return r[name] != nil })

	// An edit is checked as a create.
	// The operator may still be writing the status of the run it made, so
	// a Conflict is read again, not taken for the refusal.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		edited := &schedv1.CronWorkflow{}
		if err := tess.Get(ctx, client.ObjectKeyFromObject(cw), edited); err != nil {
			return err
		}
		edited.Spec.WorkflowSpec = refused["a privileged step"].spec
		return tess.Update(ctx, edited)
	})
	if err == nil || !strings.Contains(err.Error(), "spec.workflowSpec.steps[build].task.securityContext.privileged") {
		t.Errorf("an edit to a privileged step: err = %v, want it refused naming the field", err)
	}

	// The tier tightens: the next run is refused when the operator creates
	// it, by the Workflow's own policy, and Ready says so.
	q := &corev1.ResourceQuota{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: schedv1.TierObjectName}, q); err != nil {
		t.Fatal(err)
	}
	q.Annotations[schedv1.AnnotationTierTTLMax] = "30m"
	if err := env.Client.Update(ctx, q); err != nil {
		t.Fatal(err)
	}
	probe := MakeWorkflow("probe", ns).Obj()
	probe.Spec = cw.Spec.WorkflowSpec
	testenv.Poll(t, testenv.Timeout, "the tighter tier enforced", func(ctx context.Context) (bool, error) {
		err := tess.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "at most 30m"), nil
	})
	tick(t, cw, at.Add(time.Hour))
	got := waitCron(t, cw, "Rejected", readyIs(metav1.ConditionFalse, schedv1.ReasonRejected))
	if msg := ready(got).Message; !strings.Contains(msg, "tier free keeps finished workflows at most 30m") || !strings.Contains(msg, "fix spec.workflowSpec") {
		t.Errorf("Ready: %q", msg)
	}
	if r := runs(t, cw); len(r) != 1 {
		t.Errorf("runs %v: want only the first", keys(r))
	}
	waitEvent(t, cw, schedv1.ReasonRejected, "at most 30m")

	// Who may write CronWorkflows but not create Workflows may not write one.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cron-only", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{schedv1.GroupName}, Resources: []string{"cronworkflows"}, Verbs: []string{"create", "update", "patch", "get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cron-only", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cron-only"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "uma"}}}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := testenv.WaitAllowed(ctx, env.Client, "uma", createIn(ns)); err != nil {
		t.Fatal(err)
	}
	uma := impersonate(t, "uma")
	err = uma.Create(ctx, MakeCronWorkflow("sneaky", ns, "* * * * *").Step("a", "busybox").Obj(), client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user uma may not create workflows.sched.kubectl-sched.dev in namespace `+ns) {
		t.Errorf("uma's CronWorkflow: err = %v, want it forbidden as she may not create Workflows", err)
	}
	// Nor edit one made by someone who may.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedule":"* * * * *"}}`))
	if err := uma.Patch(ctx, cw.DeepCopy(), patch); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may not create workflows") {
		t.Errorf("uma's edit of tess's CronWorkflow: err = %v, want it forbidden as she may not create Workflows", err)
	}
	// A label is no spec: it passes.
	label := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"payments"}}}`))
	if err := uma.Patch(ctx, cw.DeepCopy(), label); err != nil {
		t.Errorf("uma's label on tess's CronWorkflow: %v", err)
	}
}

func impersonate(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := *env.Config
	cfg.Impersonate.UserName = user
	c, err := client.New(&cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
