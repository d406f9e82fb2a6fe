package requests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// BenchmarkRequestCost: what the API server spends on each request of a
// task's and a workflow's life, each sent by the client that sends it (a
// namespace's user, or the operator with its token and generated RBAC,
// whose requests the confinement and pod-patch policies check), against
// a bare Job's create by a user. One client sends one request after
// another for ten seconds per kind, no operator running; printed per
// request: the API server's CPU time (/proc) and the client's wall time,
// and where the CPU went (a CPU profile of those ten seconds, kept under
// $COST_PROFILES when set).
//
//	go test ./operator/bench/requests -run '^$' -bench RequestCost -benchtime 1x -timeout 30m
func BenchmarkRequestCost(b *testing.B) {
	dir := os.Getenv("COST_PROFILES")
	if dir == "" {
		dir = b.TempDir()
	}
	requestCosts(b, env.Config, admin(b), dir)
}

func requestCosts(b *testing.B, cfg *rest.Config, c client.Client, dir string) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	pid, err := testenv.APIServerPID(cfg.Host)
	if err != nil {
		b.Fatal(err)
	}
	op := operatorClient(b, cfg, cs)
	without(b, c, os.Getenv("COST_WITHOUT"))
	ns := namespace(b, c, "cost")
	quick := map[string]string{"sim.kubectl-sched.dev/run-seconds": "0", "sim.kubectl-sched.dev/termination-message": "out=ok"}
	task := func(args ...string) schedv1.AgentTaskSpec {
		return schedv1.AgentTaskSpec{Image: "x", Args: args, PodMetadata: &schedv1.PodMetadata{Annotations: quick}}
	}
	workflow := func(name string, steps int) *schedv1.Workflow {
		wf := MakeWorkflow(name, ns)
		for i := range steps {
			var args []string
			if i > 0 {
				args = []string{fmt.Sprintf("${steps.s%d.output.out}", i-1)}
			}
			wf.StepTask(fmt.Sprintf("s%d", i), task(args...))
		}
		return wf.Obj()
	}
	owner := MakeAgentTask("owner", ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = task() }).Obj()
	for _, o := range []client.Object{workflow("three", 3), workflow("twenty", 20), owner} {
		if err := c.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	// A bare Job, as a user writes it; the operator's adds its labels, an
	// owner, and the outputs finalizer and pod failure policy of
	// agenttask.buildJob.
	bare := func(name string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: quick},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, SecurityContext: podsecurity.Pod(),
					Containers: []corev1.Container{{Name: "task", Image: "x", SecurityContext: podsecurity.Container(nil)}}},
			}},
		}
	}
	operators := func(name string) *batchv1.Job {
		j := bare(name)
		labels := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelAgentTask: name}
		j.Labels, j.Spec.Template.Labels = labels, labels
		j.Spec.Template.Finalizers = []string{schedv1.FinalizerOutputs}
		j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
		}}}
		j.OwnerReferences = []metav1.OwnerReference{{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
		return j
	}
	// Pods whose outputs finalizer the operator releases, made beforehand.
	const pods = 4000
	create(b, c, pods, func(i int) client.Object {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: ns, Finalizers: []string{schedv1.FinalizerOutputs},
				Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, SecurityContext: podsecurity.Pod(),
				Containers: []corev1.Container{{Name: "task", Image: "x", SecurityContext: podsecurity.Container(nil)}}},
		}
	})
	statusPatch := func(cl client.Client, obj client.Object, i int) error {
		patch := fmt.Sprintf(`{"status":{"phase":"Running","message":"write %d"}}`, i)
		return cl.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	kinds := []struct {
		name string
		do   func(i int) error
	}{
		{"user: create a bare Job", func(i int) error { return c.Create(ctx, bare(fmt.Sprintf("j-%05d", i))) }},
		{"user: create an AgentTask", func(i int) error {
			return c.Create(ctx, MakeAgentTask(fmt.Sprintf("t-%05d", i), ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = task() }).Obj())
		}},
		{"user: create a Workflow of 3 steps", func(i int) error { return c.Create(ctx, workflow(fmt.Sprintf("w-%05d", i), 3)) }},
		{"operator: create a step's AgentTask", func(i int) error {
			return op.Create(ctx, MakeAgentTask(fmt.Sprintf("s-%05d", i), ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = task() }).Obj())
		}},
		{"operator: create a task's Job", func(i int) error { return op.Create(ctx, operators(fmt.Sprintf("o-%05d", i))) }},
		{"operator: patch AgentTask status", func(i int) error {
			return statusPatch(op, &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: owner.Name, Namespace: ns}}, i)
		}},
		{"operator: patch 3-step Workflow status", func(i int) error {
			return statusPatch(op, &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "three", Namespace: ns}}, i)
		}},
		{"operator: patch 20-step Workflow status", func(i int) error {
			return statusPatch(op, &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "twenty", Namespace: ns}}, i)
		}},
		{"operator: release a pod", func(i int) error {
			if i >= pods {
				return errExhausted
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: ns}}
			return op.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(schedv1.ReleaseOutputsPatch)))
		}},
	}
	const window = 10 * time.Second
	for _, k := range kinds {
		prof := filepath.Join(dir, strings.NewReplacer(" ", "-", ":", "", "'", "").Replace(k.name)+".pprof")
		done := make(chan error, 1)
		go func() { done <- testenv.SaveAPIServerProfile(ctx, cs, prof, window) }()
		time.Sleep(100 * time.Millisecond)
		cpu0, start, n := testenv.ProcessCPU(pid), time.Now(), 0
		for time.Since(start) < window-200*time.Millisecond {
			if err := k.do(n); errors.Is(err, errExhausted) {
				break
			} else if err != nil {
				b.Fatalf("%s: %v", k.name, err)
			}
			n++
		}
		wall, cpu := time.Since(start), testenv.ProcessCPU(pid)-cpu0
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		fmt.Printf("%-42s %5d requests: API server CPU %6.2f ms, wall %6.2f ms per request\n", k.name, n,
			float64(cpu.Microseconds())/1000/float64(n), float64(wall.Microseconds())/1000/float64(n))
		fmt.Println("    where it went: " + testenv.CostBreakdown(prof))
	}
}

var errExhausted = errors.New("no more objects prepared")

// without deletes the bindings of the admission policies named in list
// (comma-separated, without the kubectl-sched- prefix; "all" for every
// one), to measure what they cost; the API server stops enforcing them
// within a few seconds.
func without(b *testing.B, c client.Client, list string) {
	if list == "" {
		return
	}
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := c.List(context.Background(), &bindings); err != nil {
		b.Fatal(err)
	}
	for _, binding := range bindings.Items {
		for _, name := range strings.Split(list, ",") {
			if name == "all" && strings.HasPrefix(binding.Name, "kubectl-sched-") || binding.Name == "kubectl-sched-"+name {
				if err := c.Delete(context.Background(), &binding); err != nil {
					b.Fatal(err)
				}
				fmt.Printf("without the admission policy %s\n", binding.Name)
			}
		}
	}
	time.Sleep(5 * time.Second)
}

// operatorClient is a client with a token of the operator's service
// account bound to its generated RBAC (testenv.OperatorConfig), as the
// operator runs: the policies that confine it match its user.
func operatorClient(b *testing.B, cfg *rest.Config, cs kubernetes.Interface) client.Client {
	ctx := context.Background()
	if _, err := testenv.OperatorConfig(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(testenv.OperatorNamespace).CreateToken(ctx, testenv.OperatorServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	opCfg := rest.AnonymousClientConfig(cfg)
	opCfg.BearerToken = tok.Status.Token
	opCfg.QPS, opCfg.Burst = 1000, 2000
	c, err := client.New(opCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}
