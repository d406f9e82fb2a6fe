package workflow_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// buildTemplate is a template of two steps: build (running a few seconds,
// so the test can edit the template meanwhile) and report, which reads
// build's image; commit defaults to main.
func buildTemplate(name, ns, image string) *schedv1.WorkflowTemplate {
	spec := MakeWorkflow(name, ns).Param("commit", "main").
		StepTask("build", step(image, 0, "image=reg/app:1", 3, "--commit=${params.commit}")).
		StepTask("report", step("busybox", 0, "", 0, "${steps.build.output.image}")).Obj().Spec
	return &schedv1.WorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
}

// TestRunsFromTemplatesOnTheSimulatedCluster: as members of tenant
// namespaces (made as 'kubectl sched tenant create' makes them), a run
// naming a WorkflowTemplate takes its steps and params once, when it
// starts: editing the template while it runs changes nothing, and a retry
// runs what the original took, not the edited template. A run naming a
// ClusterWorkflowTemplate takes the cluster's, though the namespace has a
// WorkflowTemplate of the same name; a run in another namespace does not
// see this namespace's template (it waits, TemplateNotFound); a cluster
// template with a privileged step fails the run, the copy refused by the
// namespace's policies (InvalidSpec); a param the template does not
// declare fails the run (InvalidParams).
func TestRunsFromTemplatesOnTheSimulatedCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := testenv.TenantNamespace(t, sim.Client, "team", []string{"alice"}, nil)
	other := testenv.TenantNamespace(t, sim.Client, "team", []string{"bob"}, nil)
	alice, err := testenv.Impersonate(sim.Config, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := testenv.Impersonate(sim.Config, "bob")
	if err != nil {
		t.Fatal(err)
	}
	create := func(c client.Client, obj client.Object) {
		t.Helper()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	tmpl := buildTemplate("release", ns, "builder:1")
	create(alice, tmpl)
	first := MakeWorkflow("first", ns).FromTemplate(schedv1.KindWorkflowTemplate, "release").Param("commit", "abc123").Obj()
	create(alice, first)

	// Once copied in, the run records the template's version.
	resolved := waitWorkflow(t, ns, "first", "resolved", func(wf *schedv1.Workflow) bool { return len(wf.Spec.Steps) > 0 })
	ref := resolved.Spec.WorkflowTemplateRef
	if ref.UID != tmpl.UID || ref.ResourceVersion != tmpl.ResourceVersion {
		t.Errorf("the run records %s %s, want the template's uid %s, resourceVersion %s", ref.UID, ref.ResourceVersion, tmpl.UID, tmpl.ResourceVersion)
	}
	if diff := cmp.Diff([]schedv1.WorkflowParam{{Name: "commit", Value: "abc123"}}, resolved.Spec.Params); diff != "" {
		t.Errorf("the run's params (-want +got):\n%s", diff)
	}

	// Edited while the run runs: the run keeps what it took.
	edited := tmpl.DeepCopy()
	edited.Spec.Steps[0].Task.Image = "builder:2"
	edited.Spec.Steps[0].Task.Args = []string{"--edited"}
	if err := alice.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "first", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("first: %s %s: %s", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	build := getTask(t, ns, names.StepTask("first", 0, "build"))
	if build.Spec.Image != "builder:1" || !cmp.Equal(build.Spec.Args, []string{"--commit=abc123"}) {
		t.Errorf("first's build ran %s %v, want builder:1 [--commit=abc123] as the template was when the run started", build.Spec.Image, build.Spec.Args)
	}
	if args := getTask(t, ns, names.StepTask("first", 1, "report")).Spec.Args; !cmp.Equal(args, []string{"reg/app:1"}) {
		t.Errorf("first's report args %v, want build's output", args)
	}

	// A retry from build takes what first took, not the edited template.
	retry := MakeWorkflow("second", ns).FromTemplate(schedv1.KindWorkflowTemplate, "release").Param("commit", "abc123").
		Spec(func(s *schedv1.WorkflowSpec) {
			s.RetryOf = &schedv1.WorkflowRetry{Workflow: "first", FromStep: "build"}
		}).Obj()
	create(alice, retry)
	got = waitWorkflow(t, ns, "second", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("second: %s %s: %s", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if got.Spec.WorkflowTemplateRef.ResourceVersion != tmpl.ResourceVersion {
		t.Errorf("the retry records resourceVersion %s, want first's %s", got.Spec.WorkflowTemplateRef.ResourceVersion, tmpl.ResourceVersion)
	}
	if b := getTask(t, ns, names.StepTask("second", 0, "build")); b.Spec.Image != "builder:1" || !cmp.Equal(b.Spec.Args, []string{"--commit=abc123"}) {
		t.Errorf("the retry's build ran %s %v, want first's builder:1 [--commit=abc123]", b.Spec.Image, b.Spec.Args)
	}

	// A cluster template, and the namespace's of the same name.
	shared := &schedv1.ClusterWorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: "shared-" + ns}, Spec: buildTemplate("x", "", "cluster-builder:1").Spec}
	create(sim.Client, shared)
	t.Cleanup(func() { _ = sim.Client.Delete(ctx, shared) })
	create(alice, buildTemplate(shared.Name, ns, "tenant-builder:1"))
	fromCluster := MakeWorkflow("from-cluster", ns).FromTemplate(schedv1.KindClusterWorkflowTemplate, shared.Name).Obj()
	create(alice, fromCluster)
	got = waitWorkflow(t, ns, "from-cluster", "finished", finished)
	if b := getTask(t, ns, names.StepTask("from-cluster", 0, "build")); got.Status.Phase != schedv1.WorkflowSucceeded || b.Spec.Image != "cluster-builder:1" || !cmp.Equal(b.Spec.Args, []string{"--commit=main"}) {
		t.Errorf("from-cluster: %s; build ran %s %v, want the ClusterWorkflowTemplate's cluster-builder:1 with the default --commit=main", got.Status.Phase, b.Spec.Image, b.Spec.Args)
	}

	// Another namespace does not see this one's template.
	elsewhere := MakeWorkflow("elsewhere", other).FromTemplate(schedv1.KindWorkflowTemplate, "release").Obj()
	create(bob, elsewhere)
	got = waitWorkflow(t, other, "elsewhere", "waiting for its template", func(wf *schedv1.Workflow) bool { return wf.Status.Reason != "" })
	if got.Status.Phase != schedv1.WorkflowPending || got.Status.Reason != schedv1.ReasonTemplateNotFound || len(got.Spec.Steps) != 0 ||
		!strings.Contains(got.Status.Message, "WorkflowTemplate release in namespace "+other+" does not exist") {
		t.Errorf("elsewhere: %s %s: %s; want Pending, TemplateNotFound in its own namespace", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if c := meta(got.Status.Conditions, schedv1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != schedv1.ReasonTemplateNotFound {
		t.Errorf("elsewhere's Ready condition %+v, want False, TemplateNotFound", c)
	}

	// A cluster template with a step the namespace's policies refuse (a
	// privileged container): the copy is refused as the member's own
	// workflow would be, and the run fails without a task.
	priv := buildTemplate("x", "", "busybox").Spec
	priv.Steps[0].Task.SecurityContext = &schedv1.SecurityContext{Privileged: ptr.To(true)}
	privileged := &schedv1.ClusterWorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: "privileged-" + ns}, Spec: priv}
	create(sim.Client, privileged)
	t.Cleanup(func() { _ = sim.Client.Delete(ctx, privileged) })
	create(alice, MakeWorkflow("escalate", ns).FromTemplate(schedv1.KindClusterWorkflowTemplate, privileged.Name).Obj())
	got = waitWorkflow(t, ns, "escalate", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Reason != schedv1.ReasonInvalidSpec || len(got.Spec.Steps) != 0 ||
		!strings.Contains(got.Status.Message, "the run cannot take the steps of ClusterWorkflowTemplate/"+privileged.Name) ||
		!strings.Contains(got.Status.Message, "privileged") {
		t.Errorf("escalate: %s %s: %s; want Failed, InvalidSpec, the privileged step refused", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if stepTaskExists(t, ns, "escalate", 0, "build") {
		t.Error("the refused run made a task")
	}

	// A param the template does not declare.
	typo := MakeWorkflow("typo", ns).FromTemplate(schedv1.KindWorkflowTemplate, "release").Param("comit", "abc").Obj()
	create(alice, typo)
	got = waitWorkflow(t, ns, "typo", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Reason != schedv1.ReasonInvalidParams ||
		!strings.Contains(got.Status.Message, "spec.params: comit is not a param of WorkflowTemplate/release, which declares commit") {
		t.Errorf("typo: %s %s: %s; want Failed, InvalidParams naming the param", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
}
