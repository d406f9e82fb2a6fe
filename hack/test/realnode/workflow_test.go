package realnode

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

// Each step computes its output from the one before: the central promise,
// with real containers and the real termination messages.
func TestWorkflowStepsComputeAndPassOutputs(t *testing.T) {
	e := need(t)
	e.operator(t)
	step := func(name, script string) schedv1.WorkflowStep {
		return schedv1.WorkflowStep{Name: name, Task: shTask("", script).Spec}
	}
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "arith", Namespace: ns},
		Spec: schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{
			step("count", `n=$(seq 1 12 | wc -l); echo "counted $n"; echo "n=$n" > /dev/termination-log`),
			step("square", `sq=$(( ${steps.count.output.n} * ${steps.count.output.n} )); echo "square $sq"; echo "sq=$sq" > /dev/termination-log`),
			step("report", `total=$(( ${steps.1.output.sq} + ${steps.count.output.n} )); echo "total $total"; printf '{"total": "%s"}' "$total" > /dev/termination-log`),
		}},
	}
	e.create(t, wf)

	out, errOut, code := e.kubectlRun(t, 3*time.Minute, "sched", "workflow", "watch", wf.Name, "--logs")
	if code != 0 {
		t.Fatalf("workflow watch --logs: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, line := range []string{"counted 12", "square 144", "total 156"} {
		if !strings.Contains(out, line) {
			t.Errorf("watch --logs did not show the container's line %q:\n%s", line, out)
		}
	}

	wf = eventually(t, e, wf, time.Minute, func(w *schedv1.Workflow) bool { return w.Status.Phase.Finished() })
	got := map[string]map[string]string{}
	for _, s := range wf.Status.Steps {
		got[s.Name] = s.Outputs
		if node := e.podNode(t, taskPod(t, e, s.TaskName)); node != cluster.RealNodeName {
			t.Errorf("step %s ran on %s, want the real node", s.Name, node)
		}
	}
	want := map[string]map[string]string{"count": {"n": "12"}, "square": {"sq": "144"}, "report": {"total": "156"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("step outputs (-want +got):\n%s", diff)
	}
}

func taskPod(t *testing.T, e *env, name string) string {
	t.Helper()
	task := eventually(t, e, &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, time.Minute,
		func(t *schedv1.AgentTask) bool { return t.Status.PodName != "" })
	return task.Status.PodName
}

// An app whose readiness probe the kubelet really runs, and one whose two
// services really crash: one writes why to /dev/termination-log, the
// other only to its log, whose end the kubelet makes its termination
// message (FallbackToLogsOnError); both reach the app's status, and
// `kubectl sched logs -p` shows the crashed containers' logs.
func TestAppsOnTheRealNode(t *testing.T) {
	e := need(t)
	e.operator(t)
	web := &schedv1.UserDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "httpd", Namespace: ns},
		Spec: schedv1.UserDeploymentSpec{
			Placement: onRealNode(),
			Services: []schedv1.ServiceSpec{{
				Name:    "web",
				Image:   "busybox:1.36",
				Command: []string{"httpd", "-f", "-p", "8080", "-h", "/etc"},
				Ports:   []schedv1.ServicePort{{Port: 8080}},
				ReadinessProbe: &schedv1.Probe{
					HTTPGet:       &schedv1.HTTPGetAction{Path: "/passwd", Port: intstr.FromInt32(8080)},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	crashy := &schedv1.UserDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "crashy", Namespace: ns},
		Spec: schedv1.UserDeploymentSpec{
			Placement: onRealNode(),
			Services: []schedv1.ServiceSpec{{
				Name:     "worker",
				Image:    "busybox:1.36",
				Exposure: schedv1.ExposureNone,
				Command:  []string{"sh", "-c", "echo 'cannot open /data/db' > /dev/termination-log; exit 2"},
			}, {
				Name:     "logger",
				Image:    "busybox:1.36",
				Exposure: schedv1.ExposureNone,
				Command:  []string{"sh", "-c", "echo 'connecting to db:5432'; echo 'fatal: db:5432 refused the connection' >&2; exit 3"},
			}},
		},
	}
	e.create(t, web)
	e.create(t, crashy)

	web = eventually(t, e, web, 2*time.Minute, func(a *schedv1.UserDeployment) bool { return a.Status.Phase == schedv1.UserDeploymentRunning })
	for _, p := range e.podsOf(t, ns, map[string]string{schedv1.LabelUserDeployment: web.Name}) {
		if p.Spec.NodeName != cluster.RealNodeName {
			t.Errorf("pod %s runs on %s, want the real node", p.Name, p.Spec.NodeName)
		}
	}

	crashy = eventually(t, e, crashy, 2*time.Minute, func(a *schedv1.UserDeployment) bool {
		c := condition(a.Status.Conditions, schedv1.ConditionDegraded)
		return a.Status.Phase == schedv1.UserDeploymentDegraded && c.Reason == schedv1.ReasonCrashLoop && strings.Count(c.Message, "keeps crashing") == 2
	})
	msg := condition(crashy.Status.Conditions, schedv1.ConditionDegraded).Message
	for _, want := range []string{
		"exit code 2: cannot open /data/db",
		// The log's end, both streams, in whichever order the runtime
		// wrote the two lines (the script's order is not kept under load).
		"exit code 3: ",
		"connecting to db:5432",
		"fatal: db:5432 refused the connection",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("crash loop message %q, want %q: the exit code and the termination message, or the log's end", msg, want)
		}
	}
	for _, svc := range crashy.Status.Services {
		if !strings.Contains(svc.Message, "keeps crashing") {
			t.Errorf("service %s: message %q, want the crash", svc.Name, svc.Message)
		}
	}

	// The crashed containers' own logs.
	out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "logs", crashy.Name, "logger", "--previous")
	if code != 0 || !regexp.MustCompile(`(?m)^\[logger crashy-logger-\S+\] fatal: db:5432 refused the connection$`).MatchString(out) {
		t.Errorf("logs -p: exit %d, want the crashed container's log:\n%s%s", code, out, errOut)
	}
}

func condition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// A SchedExt on the real node reports what this host's kernel can do. The
// machines here have no sched_ext, so the preflight finds
// /sys/kernel/sched_ext absent and the node is unsupported, not attached.
// On a kernel with sched_ext and BTF the preflight passes instead; busybox
// holds no scx_lavd, so the node is then neither unsupported nor attached.
// Either way the node gets no CPU scheduler label, and a task that asks
// for scx_lavd stays Pending, saying which scheduler and which SchedExt.
func TestSchedExtReportsTheKernel(t *testing.T) {
	e := need(t)
	e.operator(t)
	scx := &schedv1.SchedExt{
		ObjectMeta: metav1.ObjectMeta{Name: "real-node-scx"},
		Spec: schedv1.SchedExtSpec{
			Scheduler:    schedv1.SchedulerSource{Name: "scx_lavd", Image: "busybox:1.36"},
			NodeSelector: map[string]string{schedv1.NodeLabelPool: cluster.RealNodePool},
			Tolerations:  []corev1.Toleration{{Key: schedv1.TaintPool, Operator: corev1.TolerationOpEqual, Value: cluster.RealNodePool, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	e.create(t, scx)

	_, noSchedExt := os.Stat("/sys/kernel/sched_ext")
	_, noBTF := os.Stat("/sys/kernel/btf/vmlinux")
	if noSchedExt != nil || noBTF != nil {
		scx = eventually(t, e, scx, 2*time.Minute, func(s *schedv1.SchedExt) bool { return len(s.Status.UnsupportedNodes) > 0 })
		if diff := cmp.Diff([]string{cluster.RealNodeName}, scx.Status.UnsupportedNodes); diff != "" {
			t.Errorf("unsupported nodes (-want +got):\n%s", diff)
		}
		why := "/sys/kernel/sched_ext is absent"
		if noSchedExt == nil {
			why = "/sys/kernel/btf/vmlinux is absent"
		}
		out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "schedext", "status", scx.Name)
		if !strings.Contains(out+errOut, why) {
			t.Errorf("schedext status (exit %d) does not say %q:\n%s%s", code, why, out, errOut)
		}
	} else {
		// The preflight ran and passed on the node.
		deadline := time.Now().Add(2 * time.Minute)
		for !preflightPassed(t, e, scx.Name) {
			if time.Now().After(deadline) {
				t.Fatal("the preflight never passed on a kernel with sched_ext and BTF")
			}
			time.Sleep(time.Second)
		}
		scx = eventually(t, e, scx, time.Minute, func(s *schedv1.SchedExt) bool { return s.Status.DesiredNodes == 1 })
		if len(scx.Status.UnsupportedNodes) != 0 {
			t.Errorf("unsupported nodes %v on a kernel with sched_ext", scx.Status.UnsupportedNodes)
		}
	}
	if scx.Status.DesiredNodes != 1 || scx.Status.AvailableNodes != 0 {
		t.Errorf("desired %d, available %d; want 1 and 0 (nothing attached)", scx.Status.DesiredNodes, scx.Status.AvailableNodes)
	}

	// A task that asks for scx_lavd on the real node waits, and says why.
	task := shTask("wants-lavd", "echo never")
	task.Spec.Placement.CPUScheduler = "scx_lavd"
	e.create(t, task)
	// Here the SchedExt's Ready reason is UnsupportedKernel; on a kernel
	// with sched_ext, whatever keeps busybox from attaching.
	want := regexp.MustCompile(`^no node runs the CPU scheduler scx_lavd \(placement\.cpuScheduler\) yet: SchedExt real-node-scx \((\w+)\) loads it, and the pod runs once a node's kernel reports it attached$`)
	task = eventually(t, e, task, time.Minute, func(at *schedv1.AgentTask) bool {
		m := want.FindStringSubmatch(at.Status.Message)
		return at.Status.Reason == schedv1.ReasonCPUSchedulerUnavailable && m != nil &&
			(m[1] == schedv1.ReasonUnsupportedKernel || (noSchedExt == nil && noBTF == nil && m[1] != schedv1.ReasonAttached))
	})
	if task.Status.Phase != schedv1.TaskPending {
		t.Errorf("task %s with %s: %s, want Pending", task.Status.Phase, task.Status.Reason, task.Status.Message)
	}
	node, err := e.kube.CoreV1().Nodes().Get(context.Background(), cluster.RealNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := node.Labels[schedv1.NodeLabelCPUScheduler]; ok {
		t.Errorf("the real node is labelled %s=%s, but its kernel runs no sched_ext scheduler", schedv1.NodeLabelCPUScheduler, v)
	}
	out, errOut, code := e.kubectlRun(t, time.Minute, "get", "agenttask", task.Name, "-n", ns, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}")
	if code != 0 || out != schedv1.ReasonCPUSchedulerUnavailable {
		t.Errorf("kubectl get: exit %d, Ready reason %q (%s), want %s", code, out, errOut, schedv1.ReasonCPUSchedulerUnavailable)
	}
}

// preflightPassed: the SchedExt's pod on the real node ran its preflight
// init container to exit code 0.
func preflightPassed(t *testing.T, e *env, name string) bool {
	for _, p := range e.podsOf(t, schedv1.DefaultSchedulerNamespace, map[string]string{schedv1.LabelSchedExt: name}) {
		for _, cs := range p.Status.InitContainerStatuses {
			if term := cs.State.Terminated; term != nil && term.ExitCode == 0 {
				return true
			}
		}
	}
	return false
}
