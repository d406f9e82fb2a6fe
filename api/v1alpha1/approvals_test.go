package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestApprovalRecordsTheRealUser: as namespace users (impersonated, bound
// to kubectl-sched-edit), a decision must name the user who makes it; a
// recorded decision cannot be rewritten under another name or removed.
// The operator trusts spec.approvals[].user because of this.
func TestApprovalRecordsTheRealUser(t *testing.T) {
	ctx := context.Background()
	const tns = "tenant-approvals"
	alice := tenant(t, tns, "alice", nil)
	bob, err := testenv.BindUser(ctx, env.Client, env.Config, tns, "bob", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "patch", Group: schedv1.GroupVersion.Group, Resource: "workflows"})
	if err != nil {
		t.Fatal(err)
	}

	// Created with a decision already in it: it must be the creator's.
	forged := MakeWorkflow("forged", tns).Approval("gate", "ship?").Step("ship", "busybox").Decide("gate", schedv1.Approved, "bob", "").Obj()
	err = alice.Create(ctx, forged)
	wantForbidden(t, "a create naming another user", err, `spec.approvals: the decision on step gate names user "bob", but the request is made by "alice"`)

	wf := MakeWorkflow("release", tns).Approval("gate", "ship?").Approval("second", "really?").Step("ship", "busybox").Obj()
	if err := alice.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), wf) })

	decide := func(c client.Client, edit func(*schedv1.WorkflowSpec)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &schedv1.Workflow{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(wf), cur); err != nil {
				return err
			}
			edit(&cur.Spec)
			return c.Update(ctx, cur)
		})
	}
	add := func(step, user string) func(*schedv1.WorkflowSpec) {
		return func(s *schedv1.WorkflowSpec) {
			s.Approvals = append(s.Approvals, schedv1.StepDecision{Step: step, Decision: schedv1.Approved, User: user})
		}
	}

	// alice says bob approved.
	wantForbidden(t, "an update naming another user", decide(alice, add("gate", "bob")), `names user "bob", but the request is made by "alice"`)
	// A cluster admin cannot either: the policy holds for everyone.
	wantForbidden(t, "an admin naming another user", decide(env.Client, add("gate", "alice")), `names user "alice", but the request is made by`)
	// alice approves as herself.
	if err := decide(alice, add("gate", "alice")); err != nil {
		t.Fatalf("alice approving as herself: %v", err)
	}
	// bob cannot take her decision over, turn it, or remove it.
	for name, edit := range map[string]func(*schedv1.WorkflowSpec){
		"rename": func(s *schedv1.WorkflowSpec) { s.Approvals[0].User = "bob" },
		"deny":   func(s *schedv1.WorkflowSpec) { s.Approvals[0].Decision = schedv1.Denied },
		"remove": func(s *schedv1.WorkflowSpec) { s.Approvals = nil },
		"replace": func(s *schedv1.WorkflowSpec) {
			s.Approvals = []schedv1.StepDecision{{Step: "second", Decision: schedv1.Approved, User: "bob"}}
		},
	} {
		err := decide(bob, edit)
		if err == nil {
			t.Errorf("%s: bob changed alice's decision", name)
			continue
		}
		if !strings.Contains(err.Error(), "an approval, once recorded, cannot change or be removed") && !strings.Contains(err.Error(), "spec.approvals cannot be removed") &&
			!strings.Contains(err.Error(), `names user "alice", but the request is made by "bob"`) {
			t.Errorf("%s: refused for another reason: %v", name, err)
		}
	}
	// bob decides the second step as himself.
	if err := decide(bob, func(s *schedv1.WorkflowSpec) {
		s.Approvals = append(s.Approvals, schedv1.StepDecision{Step: "second", Decision: schedv1.Denied, User: "bob", Reason: "not today"})
	}); err != nil {
		t.Fatalf("bob denying as himself: %v", err)
	}
	got := &schedv1.Workflow{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(wf), got); err != nil {
		t.Fatal(err)
	}
	if a := got.Spec.Approvals; len(a) != 2 || a[0].User != "alice" || a[1].User != "bob" || a[1].Decision != schedv1.Denied {
		t.Errorf("approvals %+v; want alice's approval and bob's denial", a)
	}
}

func wantForbidden(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: want it forbidden with %q, got %v", what, msg, err)
	}
}

// decideAs adds a decision to wf as c, reading it again on a Conflict.
func decideAs(ctx context.Context, c client.Client, wf *schedv1.Workflow, step string, d schedv1.Decision, user string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &schedv1.Workflow{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(wf), cur); err != nil {
			return err
		}
		cur.Spec.Approvals = append(cur.Spec.Approvals, schedv1.StepDecision{Step: step, Decision: d, User: user})
		return c.Update(ctx, cur)
	})
}

// members impersonates each user of a tenant's namespace; dana only
// through her group, release.
func members(t *testing.T) (ns string, as map[string]client.Client) {
	t.Helper()
	ns = testenv.TenantNamespace(t, env.Client, "team", []string{"alice", "bob", "carol"}, []string{"release"})
	as = map[string]client.Client{}
	for user, groups := range map[string][]string{"alice": nil, "bob": nil, "carol": nil, "dana": {"release"}} {
		c, err := testenv.Impersonate(env.Config, user, groups...)
		if err != nil {
			t.Fatal(err)
		}
		as[user] = c
	}
	return ns, as
}

// TestOnlyApproversDecide: as a tenant's members (a namespace made as
// tenant create makes it), a step that names its approvers is decided only
// by a user it lists or a member of a group it lists, and the refusal
// names them; a step that names none is decided by any member.
func TestOnlyApproversDecide(t *testing.T) {
	ctx := context.Background()
	ns, as := members(t)
	wf := MakeWorkflow("release", ns).Approval("review", "").Approvers([]string{"bob"}, []string{"release"}).
		Approval("smoke", "").Step("ship", "busybox").RequestedBy("alice").Obj()
	if err := as["alice"].Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	const refusal = `spec.approvals: step review may be decided only by its approvers (users bob; members of groups release), and user "carol" is neither listed nor in one of those groups`
	wantForbidden(t, "carol approving", decideAs(ctx, as["carol"], wf, "review", schedv1.Approved, "carol"), refusal)
	wantForbidden(t, "carol denying", decideAs(ctx, as["carol"], wf, "review", schedv1.Denied, "carol"), refusal)
	wantForbidden(t, "alice approving", decideAs(ctx, as["alice"], wf, "review", schedv1.Approved, "alice"), `user "alice" is neither listed`)
	// A cluster admin is no approver either.
	wantForbidden(t, "an admin approving", decideAs(ctx, env.Client, wf, "review", schedv1.Approved, adminName(t)), "may be decided only by its approvers")
	// Created with a decision already in it: held to the same rule.
	pre := MakeWorkflow("pre", ns).Approval("review", "").Approvers([]string{"bob"}, nil).Step("ship", "busybox").
		Decide("review", schedv1.Approved, "alice", "").Obj()
	wantForbidden(t, "a create with alice's decision", as["alice"].Create(ctx, pre), "step review may be decided only by its approvers (users bob)")

	// dana, through her group.
	if err := decideAs(ctx, as["dana"], wf, "review", schedv1.Approved, "dana"); err != nil {
		t.Fatalf("dana, of group release, approving: %v", err)
	}
	// smoke names no approvers: any member decides.
	if err := decideAs(ctx, as["carol"], wf, "smoke", schedv1.Approved, "carol"); err != nil {
		t.Fatalf("carol approving a step with no approvers: %v", err)
	}
	got := &schedv1.Workflow{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(wf), got); err != nil {
		t.Fatal(err)
	}
	if a := got.Spec.Approvals; len(a) != 2 || a[0].User != "dana" || a[1].User != "carol" {
		t.Errorf("approvals %+v; want dana's and carol's", a)
	}
}

func adminName(t *testing.T) string {
	t.Helper()
	r, err := kubernetes.NewForConfigOrDie(env.Config).AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.UserInfo.Username
}

// TestRequestedByIsTheRequester: as tenant members, spec.requestedBy names
// who makes the request: on a Workflow's create (and it cannot change), and
// on every write of a CronWorkflow's workflowSpec. The operator's own
// creates, a CronWorkflow's runs, carry the CronWorkflow's.
func TestRequestedByIsTheRequester(t *testing.T) {
	ctx := context.Background()
	ns, as := members(t)
	gated := func(name, by string) *schedv1.Workflow {
		return MakeWorkflow(name, ns).Approval("review", "").Step("ship", "busybox").RequestedBy(by).Obj()
	}
	wantForbidden(t, "alice naming bob", as["alice"].Create(ctx, gated("forged", "bob")),
		`spec.requestedBy names "bob", but the request is made by "alice"`)
	wf := gated("mine", "alice")
	if err := as["alice"].Create(ctx, wf); err != nil {
		t.Fatalf("alice naming herself: %v", err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &schedv1.Workflow{}
		if err := as["bob"].Get(ctx, client.ObjectKeyFromObject(wf), cur); err != nil {
			return err
		}
		cur.Spec.RequestedBy = "bob"
		return as["bob"].Update(ctx, cur)
	})
	if err == nil || !strings.Contains(err.Error(), "spec.requestedBy: a Workflow's spec cannot change once it is created") {
		t.Errorf("bob taking alice's run over: %v", err)
	}

	cron := func(by string) *schedv1.CronWorkflow {
		return MakeCronWorkflow("nightly", ns, "0 2 * * *").Spec(func(s *schedv1.CronWorkflowSpec) {
			s.WorkflowSpec = gated("x", by).Spec
		}).Obj()
	}
	wantForbidden(t, "a CronWorkflow naming bob", as["alice"].Create(ctx, cron("bob")),
		`spec.workflowSpec.requestedBy names "bob", but "alice" writes the workflowSpec`)
	cw := cron("alice")
	if err := as["alice"].Create(ctx, cw); err != nil {
		t.Fatalf("alice's CronWorkflow: %v", err)
	}
	editCron := func(c client.Client, edit func(*schedv1.CronWorkflowSpec)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &schedv1.CronWorkflow{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(cw), cur); err != nil {
				return err
			}
			edit(&cur.Spec)
			return c.Update(ctx, cur)
		})
	}
	// bob changes what the runs do, leaving alice as their requester.
	wantForbidden(t, "bob editing alice's steps", editCron(as["bob"], func(s *schedv1.CronWorkflowSpec) { s.WorkflowSpec.Steps[1].Task.Image = "evil" }),
		`spec.workflowSpec.requestedBy names "alice", but "bob" writes the workflowSpec`)
	if err := editCron(as["bob"], func(s *schedv1.CronWorkflowSpec) {
		s.WorkflowSpec.Steps[1].Task.Image, s.WorkflowSpec.RequestedBy = "evil", "bob"
	}); err != nil {
		t.Errorf("bob editing the steps as himself: %v", err)
	}
	// The schedule is not what the runs do.
	if err := editCron(as["alice"], func(s *schedv1.CronWorkflowSpec) { s.Schedule = "0 3 * * *" }); err != nil {
		t.Errorf("alice moving bob's schedule: %v", err)
	}

	// The operator creates a run with the CronWorkflow's requester.
	opCfg, err := testenv.OperatorConfig(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	op, err := client.New(opCfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Create(ctx, gated("nightly-1", "bob"), client.DryRunAll); err != nil {
		t.Errorf("the operator creating a run for bob: %v", err)
	}
}

// TestSelfApprovalForbidden: with the operator setting forbid-self-approval
// (FORBID_SELF_APPROVAL=true in its ConfigMap, the policy's params), a
// tenant member cannot approve a run they asked for (they may deny it),
// cannot make a run with an approval step without saying who asks, and
// nobody can approve a run that does not say; another member approves.
// Without the setting, the requester may approve.
func TestSelfApprovalForbidden(t *testing.T) {
	ctx := context.Background()
	ns, as := members(t)
	gated := func(name, by string) *schedv1.Workflow {
		return MakeWorkflow(name, ns).Approval("review", "").Step("ship", "busybox").RequestedBy(by).Obj()
	}
	create := func(wf *schedv1.Workflow) *schedv1.Workflow {
		t.Helper()
		if err := as["alice"].Create(ctx, wf); err != nil {
			t.Fatal(err)
		}
		return wf
	}
	// Made before the setting, saying nobody asked.
	legacy := create(gated("legacy", ""))
	allowed := create(gated("allowed", "alice"))
	if err := decideAs(ctx, as["alice"], allowed, "review", schedv1.Approved, "alice"); err != nil {
		t.Fatalf("without the setting, alice approving her own run: %v", err)
	}

	forbidSelfApproval(t, "true")
	wantForbidden(t, "a run with an approval step that does not say who asks", as["alice"].Create(ctx, gated("anon", "")),
		`spec.requestedBy is not set, and this cluster forbids approving one's own run (the operator setting forbid-self-approval), so a workflow with an approval step must say who asks for it: set it to your user name "alice"`)
	cw := MakeCronWorkflow("nightly", ns, "0 2 * * *").Spec(func(s *schedv1.CronWorkflowSpec) { s.WorkflowSpec = gated("x", "").Spec }).Obj()
	wantForbidden(t, "a CronWorkflow that does not say who asks", as["alice"].Create(ctx, cw), "spec.workflowSpec.requestedBy is not set")
	wf := create(gated("mine", "alice"))
	wantForbidden(t, "alice approving her own run", decideAs(ctx, as["alice"], wf, "review", schedv1.Approved, "alice"),
		`spec.approvals: user "alice" asked for workflow mine (spec.requestedBy), and this cluster forbids approving one's own run (the operator setting forbid-self-approval): someone else must approve step review`)
	wantForbidden(t, "bob approving a run that does not say who asked", decideAs(ctx, as["bob"], legacy, "review", schedv1.Approved, "bob"),
		"spec.approvals: workflow legacy does not say who asked for it (spec.requestedBy)")
	if err := decideAs(ctx, as["bob"], wf, "review", schedv1.Approved, "bob"); err != nil {
		t.Errorf("bob approving alice's run: %v", err)
	}
	denied := create(gated("denied", "alice"))
	if err := decideAs(ctx, as["alice"], denied, "review", schedv1.Denied, "alice"); err != nil {
		t.Errorf("alice denying her own run: %v", err)
	}
}

// forbidSelfApproval writes FORBID_SELF_APPROVAL into the operator's
// ConfigMap, the kubectl-sched-self-approval policy's params, and waits
// until the policy applies it; the ConfigMap goes when the test ends.
func forbidSelfApproval(t *testing.T, value string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedv1.DefaultOperatorNamespace}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-operator-config", Namespace: schedv1.DefaultOperatorNamespace},
		Data: map[string]string{"FORBID_SELF_APPROVAL": value}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	probe := MakeWorkflow("probe", "default").Approval("review", "").Obj()
	enforced := func(ctx context.Context) (bool, error) {
		err := env.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "forbids approving one's own run"), nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, enforced); err != nil {
		t.Fatalf("FORBID_SELF_APPROVAL=%s is not enforced: %v", value, err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(ctx, cm); err != nil {
			t.Error(err)
		}
		gone := func(ctx context.Context) (bool, error) { ok, err := enforced(ctx); return !ok, err }
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, gone); err != nil {
			t.Errorf("FORBID_SELF_APPROVAL is still enforced after its ConfigMap went: %v", err)
		}
	})
}

// TestMayDecide: the plugin's reading of approvers, which it checks
// before it asks the API server, is the admission policy's.
func TestMayDecide(t *testing.T) {
	a := &schedv1.StepApproval{Approvers: &schedv1.Approvers{Users: []string{"bob"}, Groups: []string{"release", "sre"}}}
	cases := map[string]struct {
		approval *schedv1.StepApproval
		user     string
		groups   []string
		want     bool
	}{
		"listed":               {a, "bob", nil, true},
		"in a group":           {a, "dana", []string{"system:authenticated", "sre"}, true},
		"neither":              {a, "carol", []string{"system:authenticated", "dev"}, false},
		"a group named a user": {a, "release", nil, false},
		"no approvers":         {&schedv1.StepApproval{}, "carol", nil, true},
	}
	for name, tc := range cases {
		if got := tc.approval.MayDecide(tc.user, tc.groups); got != tc.want {
			t.Errorf("%s: MayDecide(%q, %v) = %v, want %v", name, tc.user, tc.groups, got, tc.want)
		}
	}
	if got, want := a.Approvers.Describe(), "bob or a member of groups release, sre"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}
