package workflow_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// releaseSpec is a template's spec: build with param commit (default
// main), then report reading build's output.
func releaseSpec(image string) schedv1.WorkflowSpec {
	spec := MakeWorkflow("x", "").Param("commit", "main").
		Step("build", image, "--commit=${params.commit}").
		Step("report", "busybox", "${steps.build.output.image}").Obj().Spec
	spec.Params[0].Description = "the commit to build"
	return spec
}

// TestRunAndScheduleFromTemplates: workflow run --from and schedule
// --from make a run (or schedule) naming the template, with only the -p
// params given; a param the template does not declare, a template that is
// not there and a --from that names no template kind are refused before
// anything is sent; template list shows the templates beside the catalog,
// and describe knows both kinds.
func TestRunAndScheduleFromTemplates(t *testing.T) {
	ctx := context.Background()
	const ns = "from-templates"
	env.Namespace(t, ns)
	wft := &schedv1.WorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: "release", Namespace: ns}, Spec: releaseSpec("builder:1")}
	cwft := &schedv1.ClusterWorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: "shared-release"}, Spec: releaseSpec("builder:2")}
	for _, obj := range []client.Object{wft, cwft} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, cwft) })

	r := env.MustRun(t, "workflow", "run", "--from", "wft/release", "-p", "commit=abc123", "--name", "r1", "-n", ns, "--dry-run=client", "-o", "yaml")
	plugintest.Golden(t, "run-from-template", r.Stdout)

	r = env.MustRun(t, "workflow", "run", "--from", "cwft/shared-release", "--name", "r2", "-n", ns, "-o", "name")
	if r.Stdout != "workflow.sched.kubectl-sched.dev/r2\n" {
		t.Errorf("-o name printed %q", r.Stdout)
	}
	got := &schedv1.Workflow{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r2"}, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(schedv1.WorkflowSpec{WorkflowTemplateRef: &schedv1.WorkflowTemplateRef{Kind: schedv1.KindClusterWorkflowTemplate, Name: "shared-release"}}, got.Spec); diff != "" {
		t.Errorf("the run's spec (-want +got):\n%s", diff)
	}

	r = env.MustRun(t, "workflow", "schedule", "nightly", "--cron", "0 2 * * *", "--from", "wft/release", "-p", "commit=main", "-n", ns, "--dry-run=client", "-o", "yaml")
	plugintest.Golden(t, "schedule-from-template", r.Stdout)

	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"undeclared param":  {[]string{"--from", "wft/release", "-p", "comit=x"}, cmdutil.ExitUsage, "workflow WorkflowTemplate/release declares no param comit"},
		"missing template":  {[]string{"--from", "wft/nope"}, cmdutil.ExitNotFound, "WorkflowTemplate nope not found in namespace " + ns},
		"not a template":    {[]string{"--from", "wf/release"}, cmdutil.ExitUsage, `--from "wf/release" names no workflow template`},
		"with -f":           {[]string{"--from", "wft/release", "-f", "x.yaml"}, cmdutil.ExitUsage, "--from cannot be used with -f or --template"},
		"with --set":        {[]string{"--from", "wft/release", "--set", "a=b"}, cmdutil.ExitUsage, "--from takes -p"},
		"another namespace": {[]string{"--from", "wft/release", "-n", "default"}, cmdutil.ExitNotFound, "WorkflowTemplate release not found in namespace default"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"workflow", "run", "-n", ns}, tc.args...)
			r := env.Run(args...)
			if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", r.Code, r.Stderr, tc.code, tc.want)
			}
		})
	}

	r = plugintest.RunWithInput("", "__complete", "--kubeconfig", env.Kubeconfig, "workflow", "run", "-n", ns, "--from", "")
	if !strings.HasPrefix(r.Stdout, "wft/release\ncwft/shared-release\n") {
		t.Errorf("--from completes:\n%s", r.Stdout)
	}

	r = env.MustRun(t, "template", "list", "-n", ns, "-o", "wide")
	plugintest.Golden(t, "template-list-with-workflowtemplates", r.Stdout)
	r = env.MustRun(t, "describe", "wft", "release", "-n", ns)
	plugintest.Golden(t, "describe-workflowtemplate", regexp.MustCompile(`(?m)^Created: .*$`).ReplaceAllString(r.Stdout, "Created: (time)"))
	r = env.MustRun(t, "describe", "workflow", "r2", "-n", ns)
	if !strings.Contains(r.Stdout, "ClusterWorkflowTemplate/shared-release (not copied in yet)") {
		t.Errorf("describe of a run from a template lacks its template:\n%s", r.Stdout)
	}
}
