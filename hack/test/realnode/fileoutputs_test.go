package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// toolsImage is the operator's binary as an image on the real node: the
// tools image of the outputs sidecar and of the clone of spec.repos.
const toolsImage = "kubectl-sched.test/tools:realnode"

// A task's files reach its status through the sidecar's log on a real
// kubelet: a 100 KiB report, a list, and the termination message's output
// beside them. In a tenant's namespace, as its member, a tier's bound
// fails the task that writes past it, saying so.
func TestFileOutputsFromARealContainer(t *testing.T) {
	e := need(t)
	ctx := context.Background()
	if err := e.cluster.ImportBinaryImage(ctx, toolsImage, filepath.Join(e.bin, "operator")); err != nil {
		t.Fatal(err)
	}
	e.operator(t, "TOOLS_IMAGE="+toolsImage)

	// 100 KiB of text with the characters substitution must keep as they
	// are, made at run time; cut after a whole character (a cut one is
	// refused: outputs are UTF-8).
	task := shTask("file-outputs", `d='$'
i=0; while [ $i -lt 5000 ]; do printf 'line %05d %s{x} größe\n' $i "$d"; i=$((i+1)); done | head -c 102400 > /out/report
printf '["a","b","c"]' > /out/items
echo sha=abc > /dev/termination-log`)
	task.Spec.Outputs = &schedv1.TaskOutputs{FromDir: "/out"}
	e.create(t, task)
	task = eventually(t, e, task, 3*time.Minute, finished)
	if task.Status.Phase != schedv1.TaskSucceeded {
		t.Fatalf("phase %s %s: %s", task.Status.Phase, task.Status.Reason, task.Status.Message)
	}
	var want strings.Builder
	for i := 0; want.Len() < 102400; i++ {
		fmt.Fprintf(&want, "line %05d ${x} größe\n", i)
	}
	report := want.String()[:102400]
	if got := task.Status.FileOutputs["report"]; got != report {
		t.Errorf("report is %d bytes, want the 102400 written (first difference at %d)", len(got), firstDiff(got, report))
	}
	if got := task.Status.FileOutputs["items"]; got != `["a","b","c"]` {
		t.Errorf("items = %q", got)
	}
	if diff := cmp.Diff(map[string]string{"sha": "abc"}, task.Status.Outputs); diff != "" {
		t.Errorf("termination message outputs (-want +got):\n%s", diff)
	}
	if !strings.Contains(task.Status.Message, "2 file output(s) of 102413 bytes") {
		t.Errorf("message %q does not count the file outputs", task.Status.Message)
	}

	// A member of a tenant whose tier allows 64 KiB.
	const tenantNS, member = "outputs-tenant", "bob"
	realTierWith(t, e, "real-outputs", "outputs: {maxFileBytes: 64Ki}\n")
	if out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "tenant", "create", tenantNS, "--tier", "real-outputs", "--user", member); code != 0 {
		t.Fatalf("tenant create: exit %d\n%s%s", code, out, errOut)
	}
	t.Cleanup(func() {
		_ = e.client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})
	})
	quotaCounts(t, e, tenantNS)
	manifest := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: AgentTask
metadata:
  name: too-big
spec:
  image: busybox:1.36
  command: [sh, -c, 'head -c 70000 /dev/zero | tr "\0" x > /out/big']
  placement: {nodePools: [real]}
  outputs: {fromDir: /out}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := e.kubectlRun(t, time.Minute, "create", "-f", manifest, "-n", tenantNS, "--as", member); code != 0 {
		t.Fatalf("create as %s: exit %d\n%s%s", member, code, out, errOut)
	}
	big := eventually(t, e, &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "too-big", Namespace: tenantNS}}, 3*time.Minute, finished)
	if big.Status.Phase != schedv1.TaskFailed || big.Status.Reason != schedv1.ReasonOutputsTruncated ||
		!strings.Contains(big.Status.Message, "more than 65536 bytes") {
		t.Errorf("status %s %s %q; want Failed OutputsTruncated naming the tier's 65536 bytes", big.Status.Phase, big.Status.Reason, big.Status.Message)
	}
	if len(big.Status.FileOutputs) != 0 {
		t.Errorf("a refused task keeps file outputs %v", big.Status.FileOutputs)
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A workflow on the real node: the first step writes a list as a file,
// the next fans out over it (forEach.from), each item's step reads its
// item, and the last reads the gathered outputs.
func TestWorkflowFansOutOverAListWrittenAsAFile(t *testing.T) {
	e := need(t)
	ctx := context.Background()
	if err := e.cluster.ImportBinaryImage(ctx, toolsImage, filepath.Join(e.bin, "operator")); err != nil {
		t.Fatal(err)
	}
	e.operator(t, "TOOLS_IMAGE="+toolsImage)
	plan := schedv1.WorkflowStep{Name: "plan", Task: shTask("", `printf '["eu","us","ap"]' > /out/regions; echo planned`).Spec}
	plan.Task.Outputs = &schedv1.TaskOutputs{FromDir: "/out"}
	deploy := schedv1.WorkflowStep{Name: "deploy", Task: shTask("", `echo "deploying ${item}"; echo "where=${item}" > /dev/termination-log`).Spec,
		ForEach: &schedv1.ForEach{From: "${steps.plan.output.regions}"}}
	report := schedv1.WorkflowStep{Name: "report", Task: shTask("", `printf 'all=%s\n' '${steps.deploy.output.where}' > /dev/termination-log`).Spec}
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "fan-out-file", Namespace: ns},
		Spec:       schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{plan, deploy, report}},
	}
	e.create(t, wf)
	wf = eventually(t, e, wf, 4*time.Minute, func(w *schedv1.Workflow) bool { return w.Status.Phase.Finished() })
	if wf.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("workflow %s %s: %s\nsteps: %+v", wf.Status.Phase, wf.Status.Reason, wf.Status.Message, wf.Status.Steps)
	}
	if got := wf.Status.Steps[0].Outputs["regions"]; got != `["eu","us","ap"]` {
		t.Errorf("plan's file output in the workflow %q", got)
	}
	if fe := wf.Status.Steps[1].ForEach; fe == nil || fe.Total != 3 {
		t.Errorf("deploy ran over %+v, want the 3 items of the file", fe)
	}
	// The items' outputs, gathered, reach the last step.
	if got := wf.Status.Steps[2].Outputs["all"]; got != `["eu","us","ap"]` {
		t.Errorf("report's output %q, want the items' where outputs gathered", got)
	}
}

// TestWorkflowSaysAFileOutputIsTooBigToPass: a step writes a 100 KiB file
// output on the real node; the step that references it cannot start, and
// the workflow fails TooLarge naming the step, the key and its size (the
// operator's cache keeps only the sizes), not MissingOutput.
func TestWorkflowSaysAFileOutputIsTooBigToPass(t *testing.T) {
	e := need(t)
	ctx := context.Background()
	if err := e.cluster.ImportBinaryImage(ctx, toolsImage, filepath.Join(e.bin, "operator")); err != nil {
		t.Fatal(err)
	}
	e.operator(t, "TOOLS_IMAGE="+toolsImage)
	gen := schedv1.WorkflowStep{Name: "gen", Task: shTask("", `head -c 102400 /dev/zero | tr "\0" r > /out/report; echo sha=abc > /dev/termination-log`).Spec}
	gen.Task.Outputs = &schedv1.TaskOutputs{FromDir: "/out"}
	use := schedv1.WorkflowStep{Name: "use", Task: shTask("", `echo '${steps.gen.output.report}'`).Spec}
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "big-file", Namespace: ns},
		Spec:       schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{gen, use}},
	}
	e.create(t, wf)
	wf = eventually(t, e, wf, 4*time.Minute, func(w *schedv1.Workflow) bool { return w.Status.Phase.Finished() })
	want := `step 1 (use) cannot start: command[2] uses ${steps.gen.output.report}, but file output "report" of step gen holds 102400 bytes`
	if wf.Status.Phase != schedv1.WorkflowFailed || wf.Status.Reason != schedv1.ReasonTooLarge || !strings.HasPrefix(wf.Status.Message, want) {
		t.Errorf("workflow %s %s %q; want Failed TooLarge starting %q", wf.Status.Phase, wf.Status.Reason, wf.Status.Message, want)
	}
	if s := wf.Status.Steps[0]; s.Phase != schedv1.StepSucceeded || s.Outputs["sha"] != "abc" || len(s.Outputs) != 1 {
		t.Errorf("gen %s with outputs %v in the workflow, want Succeeded with its termination message's only", s.Phase, s.Outputs)
	}
}
