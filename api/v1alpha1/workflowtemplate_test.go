package v1alpha1_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// templateSpec is a valid template's spec: build, then report reading
// build's output, with param commit.
func templateSpec() schedv1.WorkflowSpec {
	return MakeWorkflow("x", "").Param("commit", "main").
		Step("build", "builder:1", "--commit=${params.commit}").
		Step("report", "busybox", "${steps.build.output.image}").Obj().Spec
}

// TestTemplatesAsTenants: as members of two tenant namespaces (made as
// 'kubectl sched tenant create' makes them), a template is checked as a
// workflow is when written (its CRD rules and the references policy, on
// create and update); a member reads ClusterWorkflowTemplates but cannot
// write one, and cannot read another namespace's WorkflowTemplates; a run
// from a template cannot also carry steps, and its member cannot fill in
// its steps (only the operator copies the template in) nor change the
// template it names.
func TestTemplatesAsTenants(t *testing.T) {
	ctx := t.Context()
	ns := testenv.TenantNamespace(t, env.Client, "team", []string{"tmpl-alice"}, nil)
	other := testenv.TenantNamespace(t, env.Client, "team", []string{"tmpl-bob"}, nil)
	alice, err := testenv.Impersonate(env.Config, "tmpl-alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := testenv.Impersonate(env.Config, "tmpl-bob")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := func(name string, edit func(*schedv1.WorkflowSpec)) *schedv1.WorkflowTemplate {
		wt := &schedv1.WorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: templateSpec()}
		edit(&wt.Spec)
		return wt
	}
	refused := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want it refused saying %q", what, err, want)
		}
	}

	good := tmpl("release", func(*schedv1.WorkflowSpec) {})
	if err := alice.Create(ctx, good); err != nil {
		t.Fatalf("a valid template: %v", err)
	}
	refused("a template using a later step's output", alice.Create(ctx, tmpl("later", func(s *schedv1.WorkflowSpec) {
		s.Steps[0].Task.Args = []string{"${steps.report.output.x}"}
	})), "a step may only use the outputs of steps before it")
	refused("a template using an undeclared param", alice.Create(ctx, tmpl("undeclared", func(s *schedv1.WorkflowSpec) {
		s.Steps[0].Task.Args = []string{"${params.nope}"}
	})), "for a NAME that is not in spec.params")
	refused("a template with a malformed reference", alice.Create(ctx, tmpl("malformed", func(s *schedv1.WorkflowSpec) {
		s.Steps[0].Task.Args = []string{"${steps.build}"}
	})), "which is not a valid reference")
	refused("a template with what only a run has", alice.Create(ctx, tmpl("runlike", func(s *schedv1.WorkflowSpec) { s.Cancel = true })),
		"leave out workflowTemplateRef, retryOf, cancel")
	refused("a template naming a template", alice.Create(ctx, tmpl("nested", func(s *schedv1.WorkflowSpec) {
		s.WorkflowTemplateRef = &schedv1.WorkflowTemplateRef{Kind: schedv1.KindWorkflowTemplate, Name: "release"}
	})), "leave out workflowTemplateRef")
	broken := good.DeepCopy()
	broken.Spec.Steps[1].Task.Args = []string{"${steps.later.output.x}"}
	refused("an update that breaks a template", alice.Update(ctx, broken), "a step may only use the outputs of steps before it")

	// Cluster templates: read by members, written by cluster admins only.
	shared := &schedv1.ClusterWorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: "shared-release"}, Spec: templateSpec()}
	if err := env.Client.Create(ctx, shared); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, shared) })
	if err := alice.Get(ctx, client.ObjectKeyFromObject(shared), &schedv1.ClusterWorkflowTemplate{}); err != nil {
		t.Errorf("a member reading a ClusterWorkflowTemplate: %v", err)
	}
	if err := alice.List(ctx, &schedv1.ClusterWorkflowTemplateList{}); err != nil {
		t.Errorf("a member listing ClusterWorkflowTemplates: %v", err)
	}
	mine := &schedv1.ClusterWorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: "alices"}, Spec: templateSpec()}
	if err := alice.Create(ctx, mine); !apierrors.IsForbidden(err) {
		t.Errorf("a member creating a ClusterWorkflowTemplate: %v, want Forbidden", err)
	}
	changed := shared.DeepCopy()
	changed.Spec.Steps[0].Task.Image = "evil:1"
	if err := alice.Update(ctx, changed); !apierrors.IsForbidden(err) {
		t.Errorf("a member changing a ClusterWorkflowTemplate: %v, want Forbidden", err)
	}
	if err := alice.Delete(ctx, shared); !apierrors.IsForbidden(err) {
		t.Errorf("a member deleting a ClusterWorkflowTemplate: %v, want Forbidden", err)
	}

	// Another namespace's templates.
	if err := bob.Get(ctx, client.ObjectKeyFromObject(good), &schedv1.WorkflowTemplate{}); !apierrors.IsForbidden(err) {
		t.Errorf("a member of %s reading %s's template: %v, want Forbidden", other, ns, err)
	}
	if err := bob.List(ctx, &schedv1.WorkflowTemplateList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Errorf("a member of %s listing %s's templates: %v, want Forbidden", other, ns, err)
	}

	// Runs from a template.
	run := func(name string) *WorkflowWrapper {
		return MakeWorkflow(name, ns).FromTemplate(schedv1.KindWorkflowTemplate, "release")
	}
	refused("a run with a template and steps", alice.Create(ctx, run("both").Step("a", "busybox").Obj()), "leave out spec.steps")
	refused("a run with a template and finally steps", alice.Create(ctx, run("fin").Finally("f", schedv1.AgentTaskSpec{Image: "busybox"}).Obj()),
		"leave out spec.finally and spec.workspaces")
	refused("a run with neither", alice.Create(ctx, MakeWorkflow("neither", ns).Obj()), "set spec.steps, or spec.workflowTemplateRef")
	wf := run("from-template").Param("commit", "abc").Obj()
	if err := alice.Create(ctx, wf); err != nil {
		t.Fatalf("a run from a template: %v", err)
	}
	filled := wf.DeepCopy()
	filled.Spec.Steps = []schedv1.WorkflowStep{{Name: "evil", Task: schedv1.AgentTaskSpec{Image: "evil:1"}}}
	filled.Spec.WorkflowTemplateRef.UID, filled.Spec.WorkflowTemplateRef.ResourceVersion = good.UID, good.ResourceVersion
	refused("a member filling in a run's steps", alice.Update(ctx, filled), "spec.steps: a Workflow's spec cannot change")
	renamed := wf.DeepCopy()
	renamed.Spec.WorkflowTemplateRef.Name = "other"
	refused("a member changing the template a run names", alice.Update(ctx, renamed), "spec.workflowTemplateRef: a Workflow's spec cannot change")

	// The operator copies the template in once; after that, not even it
	// may change the steps, nor fill in a workflow that had its own.
	opCfg, err := testenv.OperatorConfig(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	operator, err := client.New(opCfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	copied := filled.DeepCopy()
	copied.Spec.Steps = good.Spec.Steps
	if err := operator.Update(ctx, copied); err != nil {
		t.Fatalf("the operator copying the template in: %v", err)
	}
	again := copied.DeepCopy()
	again.Spec.Steps[0].Task.Image = "evil:1"
	// Two policies refuse it, kubectl-sched-workflow-spec and the
	// operator's confinement; either may answer first, both name the field.
	refused("the operator changing a run's steps once copied in", operator.Update(ctx, again), "spec.steps")
	own := MakeWorkflow("own-steps", ns).Step("a", "busybox").Obj()
	if err := alice.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	own.Spec.Steps[0].Task.Image = "evil:1"
	refused("the operator changing the steps of a workflow with its own", operator.Update(ctx, own), "spec.steps")
}
