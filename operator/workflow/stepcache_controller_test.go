package workflow_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// cachedRelease builds with cache key build:${params.commit}; its build
// step would output image (if it ran) and report echoes build's image.
func cachedRelease(name, ns, commit, image string, code int, maxAge *metav1.Duration) *schedv1.Workflow {
	return MakeWorkflow(name, ns).Param("commit", commit).
		StepTask("build", step("builder:1", code, "image="+image, 0, "--commit=${params.commit}")).
		StepTask("report", step("busybox", 0, "", 0, "${steps.build.output.image}")).
		Spec(func(s *schedv1.WorkflowSpec) {
			s.Steps[0].Cache = &schedv1.StepCache{Key: "build:${params.commit}", MaxAge: maxAge}
		}).Obj()
}

// stepTaskExists says whether step i of workflow wf has its own task.
func stepTaskExists(t *testing.T, ns, wf string, i int, step string) bool {
	t.Helper()
	err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names.StepTask(wf, i, step)}, &schedv1.AgentTask{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestCachedStepsOnTheSimulatedCluster: as members of two tenant
// namespaces (made as 'kubectl sched tenant create' makes them), a
// workflow's build step with a cache key runs once; a second run with the
// same key takes its outputs without a task (CacheHit, from which task),
// and its next step uses them. A different key, a failed result, a result
// older than maxAge, a run with --no-cache, and the same key in another
// namespace each run the step.
func TestCachedStepsOnTheSimulatedCluster(t *testing.T) {
	t.Parallel()
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
	create := func(c client.Client, wf *schedv1.Workflow) {
		t.Helper()
		if err := c.Create(t.Context(), wf); err != nil {
			t.Fatal(err)
		}
	}
	succeeded := func(c string, wf *schedv1.Workflow) *schedv1.Workflow {
		t.Helper()
		got := waitWorkflow(t, wf.Namespace, wf.Name, "finished", finished)
		if got.Status.Phase != schedv1.WorkflowSucceeded {
			t.Fatalf("%s: %s %s: %s", c, got.Status.Phase, got.Status.Reason, got.Status.Message)
		}
		return got
	}

	first := cachedRelease("first", ns, "abc123", "reg/app:1", 0, nil)
	create(alice, first)
	succeeded("the first run", first)
	task := getTask(t, ns, names.StepTask("first", 0, "build"))
	if task.Labels[schedv1.LabelCacheKey] != schedv1.CacheKeyHash("build:abc123") || task.Annotations[schedv1.AnnotationCacheKey] != "build:abc123" {
		t.Fatalf("the first build's task does not record its key: labels %v, annotations %v", task.Labels, task.Annotations)
	}

	// Same key: a hit, though its step would output another image.
	second := cachedRelease("second", ns, "abc123", "reg/app:2", 0, nil)
	create(alice, second)
	got := succeeded("the second run", second)
	build := got.Status.Steps[0]
	if build.Reason != schedv1.ReasonCacheHit || build.TaskName != "" || build.CachedFrom == nil ||
		build.CachedFrom.Task != task.Name || build.CachedFrom.Workflow != "first" || !cmp.Equal(build.Outputs, map[string]string{"image": "reg/app:1"}) {
		t.Errorf("second's build: %+v; want a cache hit from %s with its outputs", build, task.Name)
	}
	if !strings.Contains(build.Message, "cache hit: took the outputs of AgentTask first-0-build of workflow first") {
		t.Errorf("second's build message %q", build.Message)
	}
	if stepTaskExists(t, ns, "second", 0, "build") {
		t.Error("the cache hit created a task")
	}
	if args := getTask(t, ns, names.StepTask("second", 1, "report")).Spec.Args; !cmp.Equal(args, []string{"reg/app:1"}) {
		t.Errorf("second's report args %v, want the cached image", args)
	}
	out := sched(t, "describe", "workflow", "second", "-n", ns, "--as", "alice")
	for _, want := range []string{"Succeeded (cached)", "first-0-build (cached)", "image=reg/app:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}

	// Misses, side by side: another key, a failed result, another namespace.
	third := cachedRelease("third", ns, "def456", "reg/app:3", 0, nil)
	broken := cachedRelease("broken", ns, "bad", "", 1, nil)
	elsewhere := cachedRelease("first", other, "abc123", "reg/app:b", 0, nil)
	create(alice, third)
	create(alice, broken)
	create(bob, elsewhere)
	got = succeeded("another key", third)
	if b := got.Status.Steps[0]; b.Reason == schedv1.ReasonCacheHit || b.Outputs["image"] != "reg/app:3" || !stepTaskExists(t, ns, "third", 0, "build") {
		t.Errorf("another key: build %+v; want it run", b)
	}
	got = succeeded("another namespace", elsewhere)
	if b := got.Status.Steps[0]; b.Reason == schedv1.ReasonCacheHit || b.CachedFrom != nil || b.Outputs["image"] != "reg/app:b" {
		t.Errorf("the same key in another namespace: build %+v; want it run, not alice's result", b)
	}
	if got := waitWorkflow(t, ns, "broken", "finished", finished); got.Status.Phase != schedv1.WorkflowFailed {
		t.Fatalf("broken: %s", got.Status.Phase)
	}
	afterBroken := cachedRelease("after-broken", ns, "bad", "reg/app:fixed", 0, nil)
	create(alice, afterBroken)
	got = succeeded("after a failed result", afterBroken)
	if b := got.Status.Steps[0]; b.Reason == schedv1.ReasonCacheHit || b.Outputs["image"] != "reg/app:fixed" {
		t.Errorf("after a failed result: build %+v; want it run", b)
	}

	// Older than maxAge: first's result finished over a second ago.
	testenv.Poll(t, testenv.LongTimeout, "first's result to be over 2s old", func(context.Context) (bool, error) {
		return time.Since(task.Status.CompletionTime.Time) > 2*time.Second, nil
	})
	expired := cachedRelease("expired", ns, "abc123", "reg/app:4", 0, &metav1.Duration{Duration: time.Second})
	create(alice, expired)
	got = succeeded("an expired result", expired)
	if b := got.Status.Steps[0]; b.Reason == schedv1.ReasonCacheHit || b.Outputs["image"] != "reg/app:4" {
		t.Errorf("older than maxAge: build %+v; want it run", b)
	}

	// --no-cache, from the plugin: the step runs though expired's and
	// first's results match.
	file := filepath.Join(t.TempDir(), "wf.yaml")
	data, err := yaml.Marshal(cachedRelease("fresh", "", "abc123", "reg/app:5", 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sched(t, "workflow", "run", "-f", file, "--no-cache", "-n", ns, "--as", "alice")
	got = succeeded("--no-cache", &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: ns}})
	if b := got.Status.Steps[0]; !got.Spec.NoCache || b.Reason == schedv1.ReasonCacheHit || b.Outputs["image"] != "reg/app:5" {
		t.Errorf("--no-cache: noCache %v, build %+v; want it run", got.Spec.NoCache, b)
	}
}
