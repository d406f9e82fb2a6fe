package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
