package realnode

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// `kubectl sched logs` across an app's pods, following a restart, and
// across a task's attempts and a workflow's steps.
func TestLogsCommand(t *testing.T) {
	e := need(t)
	e.operator(t)

	t.Run("every pod of an app, and new pods while following", func(t *testing.T) {
		app := &schedv1.UserDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "echoer", Namespace: ns},
			Spec: schedv1.UserDeploymentSpec{
				Placement: onRealNode(),
				Services: []schedv1.ServiceSpec{{
					Name: "web", Image: "busybox:1.36", Replicas: ptr.To[int32](2), Exposure: schedv1.ExposureNone,
					Command: []string{"sh", "-c", `echo "hello from $(hostname)"; exec sleep 3600`},
				}},
			},
		}
		e.create(t, app)
		eventually(t, e, app, 2*time.Minute, func(a *schedv1.UserDeployment) bool { return a.Status.Phase == schedv1.UserDeploymentRunning })
		first := map[string]bool{}
		for _, p := range e.podsOf(t, ns, map[string]string{schedv1.LabelUserDeployment: app.Name}) {
			first[p.Name] = true
		}

		var out string
		deadline := time.Now().Add(time.Minute)
		for !allGreeted(out, first) {
			if time.Now().After(deadline) {
				t.Fatalf("kubectl sched logs %s never showed every pod %v:\n%s", app.Name, first, out)
			}
			time.Sleep(time.Second)
			out, _, _ = e.kubectlRun(t, time.Minute, "sched", "logs", app.Name)
		}

		f := e.follow(t, "sched", "logs", app.Name, "-f")
		f.waitFor(t, func(out string) bool { return allGreeted(out, first) })
		if _, errOut, code := e.kubectlRun(t, 3*time.Minute, "sched", "restart", app.Name, "--wait", "--timeout", "2m"); code != 0 {
			t.Fatalf("restart: exit %d: %s", code, errOut)
		}
		next := map[string]bool{}
		for _, p := range e.podsOf(t, ns, map[string]string{schedv1.LabelUserDeployment: app.Name}) {
			if !first[p.Name] && p.DeletionTimestamp == nil {
				next[p.Name] = true
			}
		}
		if len(next) == 0 {
			t.Fatal("the restart made no new pods")
		}
		f.waitFor(t, func(out string) bool { return allGreeted(out, next) })
	})

	t.Run("every attempt of a task", func(t *testing.T) {
		task := shTask("two-attempts", `echo "attempt in $(hostname)"; exit 1`)
		task.Spec.Retries = ptr.To[int32](1)
		e.create(t, task)
		eventually(t, e, task, 2*time.Minute, finished)
		out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "logs", "agenttask/"+task.Name)
		lines := regexp.MustCompile(`(?m)^\[(\S+)\] attempt in (\S+)$`).FindAllStringSubmatch(out, -1)
		if code != 0 || len(lines) != 2 || lines[0][1] == lines[1][1] {
			t.Errorf("exit %d, want one line from each of two pods:\n%s%s", code, out, errOut)
		}
		for _, l := range lines {
			if l[1] != l[2] {
				t.Errorf("line from pod %s is prefixed %s", l[2], l[1])
			}
		}
	})

	t.Run("every step of a workflow, in order, followed to the end", func(t *testing.T) {
		step := func(name, word string) schedv1.WorkflowStep {
			return schedv1.WorkflowStep{Name: name, Task: shTask("", `sleep 1; echo "`+word+`"`).Spec}
		}
		wf := &schedv1.Workflow{
			ObjectMeta: metav1.ObjectMeta{Name: "words", Namespace: ns},
			Spec:       schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{step("one", "first"), step("two", "second"), step("three", "third")}},
		}
		e.create(t, wf)
		out, errOut, code := e.kubectlRun(t, 3*time.Minute, "sched", "logs", "wf/"+wf.Name, "-f")
		want := regexp.MustCompile(`(?s)\[one words-0-one-\S+\] first\n.*\[two words-1-two-\S+\] second\n.*\[three words-2-three-\S+\] third\n`)
		if code != 0 || !want.MatchString(out) {
			t.Errorf("logs -f: exit %d, want the three steps' lines in order:\n%s%s", code, out, errOut)
		}
		// Finished: the same, without -f.
		out, _, code = e.kubectlRun(t, time.Minute, "sched", "logs", "wf/"+wf.Name)
		if code != 0 || !want.MatchString(out) {
			t.Errorf("logs: exit %d:\n%s", code, out)
		}
	})

	t.Run("a succeeded workflow's steps after their pods are deleted", func(t *testing.T) {
		step := func(name, word string) schedv1.WorkflowStep {
			return schedv1.WorkflowStep{Name: name, Task: shTask("", `echo "`+word+`"; echo "done with `+name+`"`).Spec}
		}
		wf := &schedv1.Workflow{
			ObjectMeta: metav1.ObjectMeta{Name: "kept-words", Namespace: ns},
			Spec:       schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{step("one", "first"), step("two", "second")}},
		}
		e.create(t, wf)
		wf = eventually(t, e, wf, 3*time.Minute, func(w *schedv1.Workflow) bool { return w.Status.Phase.Finished() })
		if wf.Status.Phase != schedv1.WorkflowSucceeded {
			t.Fatalf("workflow %s, want Succeeded:\n%s", wf.Status.Phase, dump(wf))
		}
		// Deleted as an admin, before --succeeded-pod-retention: the
		// operator lets them go once their logs are kept.
		selector := map[string]string{schedv1.LabelWorkflow: wf.Name}
		for _, p := range e.podsOf(t, ns, selector) {
			if err := e.client.Delete(context.Background(), &p); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(2 * time.Minute)
		for len(e.podsOf(t, ns, selector)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the steps' pods were not gone after 2 minutes: %d left", len(e.podsOf(t, ns, selector)))
			}
			time.Sleep(time.Second)
		}
		out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "logs", "wf/"+wf.Name)
		want := regexp.MustCompile(`(?s)\[one (kept-words-0-one-\S+)\] --- pod (\S+) is gone: its whole log, kept by the operator when the pod ended ---\n` +
			`\[one \S+\] first\n\[one \S+\] done with one\n` +
			`\[two (kept-words-1-two-\S+)\] --- pod (\S+) is gone: its whole log, kept by the operator when the pod ended ---\n` +
			`\[two \S+\] second\n\[two \S+\] done with two\n$`)
		m := want.FindStringSubmatch(out)
		if code != 0 || m == nil || m[1] != m[2] || m[3] != m[4] {
			t.Errorf("exit %d, want each step's kept log, in order, marked:\n%s%s", code, out, errOut)
		}
		// One step's, and task logs of its task.
		out, _, code = e.kubectlRun(t, time.Minute, "sched", "logs", "wf/"+wf.Name, "two", "--tail", "1")
		if code != 0 || !strings.HasSuffix(out, "] done with two\n") || strings.Contains(out, "second") || strings.Contains(out, "first") {
			t.Errorf("logs of step two, --tail 1: exit %d:\n%s", code, out)
		}
		out, errOut, code = e.kubectlRun(t, time.Minute, "sched", "task", "logs", "kept-words-0-one")
		if code != 0 || out != "first\ndone with one\n" || !strings.Contains(errOut, "kept by the operator") {
			t.Errorf("task logs: exit %d:\n%s%s", code, out, errOut)
		}
	})
}

func allGreeted(out string, pods map[string]bool) bool {
	for p := range pods {
		if !strings.Contains(out, "[web "+p+"] hello from "+p) {
			return false
		}
	}
	return true
}

// follower is a kubectl command left running, its output collected.
type follower struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (f *follower) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.Write(p)
}

func (f *follower) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.String()
}

func (f *follower) waitFor(t *testing.T, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ok(f.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the followed output never showed what was expected:\n%s", f.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// follow starts kubectl ARGS; it is killed when the test ends.
func (e *env) follow(t *testing.T, args ...string) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{}
	cmd := exec.CommandContext(ctx, e.kubectl, args...)
	cmd.Env = e.tour(t.TempDir()).Environ()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	return f
}
