package requests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
	"github.com/kubectl-sched/kubectl-sched/operator/userdeployment"
)

// BenchmarkRequestCost: what the API server spends on each request of a
// task's, a workflow's and an app's life (appCosts), each sent by the
// client that sends it (a namespace's user, or the operator with its token
// and generated RBAC, whose requests the confinement and pod-patch
// policies check), against a bare Job's create by a user and an app's
// Deployment and Service applied by a user. One client sends one request
// after another for ten seconds per kind, no operator running; printed per
// request: the API server's CPU time (/proc) and the client's wall time,
// and where the CPU went (a CPU profile of those ten seconds, kept under
// $COST_PROFILES when set). $COST_ONLY runs only the kinds whose name
// contains it ("app" for an app's).
//
//	go test ./hack/test/bench/requests -run '^$' -bench RequestCost -benchtime 1x -timeout 30m
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
	// taskjob.buildJob.
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
	kinds := []costKind{
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
	kinds = append(kinds, appCosts(b, cfg, c, op, ns)...)
	const window = 10 * time.Second
	for _, k := range kinds {
		if !strings.Contains(k.name, os.Getenv("COST_ONLY")) {
			continue
		}
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

// costKind is one kind of request: do sends the i-th.
type costKind struct {
	name string
	do   func(i int) error
}

// appCosts are the requests of a one-service app's life, as
// BenchmarkUserDeployments makes them: a user's server-side apply of the
// UserDeployment (as `kubectl sched deploy`, field manager kubectl-sched),
// the operator's creates of its ControllerRevision, Deployment and Service
// in the form it sends them, a write of its status and its Running event;
// and a user's
// server-side apply of the same Deployment and Service, with the
// operator's reserved labels renamed (testenv.Unreserve), which is what
// the benchmark's direct side sends instead. The user is a namespace
// user, impersonated, with the edit roles' rules on apps, Services and
// UserDeployments.
func appCosts(b *testing.B, cfg *rest.Config, admin, op client.Client, ns string) []costKind {
	ctx := context.Background()
	const manager = "kubectl-sched" // the plugin's field manager
	var user client.Client
	for _, role := range []struct{ name, group, resource string }{
		{"system:aggregate-to-edit", "apps", "deployments"}, // edit's rules, which envtest does not aggregate
		{"kubectl-sched-edit", schedv1.GroupName, "userdeployments"},
	} {
		var err error
		user, err = testenv.BindUser(ctx, admin, cfg, ns, "cost-user", role.name,
			authorizationv1.ResourceAttributes{Verb: "patch", Group: role.group, Resource: role.resource})
		if err != nil {
			b.Fatal(err)
		}
	}
	app := func(name string) *schedv1.UserDeployment {
		return MakeUserDeployment(name, ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
			Isolation(schedv1.IsolationOpen).Obj()
	}
	// The app as the operator reads it: defaulted, with the user's
	// managed fields (whose manager its revision names).
	live := app("app")
	if err := testenv.Apply(ctx, user, live, manager); err != nil {
		b.Fatal(err)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		b.Fatal(err)
	}
	named := func(prefix string, i int) *schedv1.UserDeployment {
		ud := live.DeepCopy()
		ud.Name, ud.UID = fmt.Sprintf("%s-%05d", prefix, i), uuid.NewUUID()
		return ud
	}
	// object is the i-th app's object of kind, named after prefix.
	object := func(prefix string, i int, kind client.Object) client.Object {
		for _, o := range userdeployment.PlanObjects(named(prefix, i), userdeployment.Settings{}) {
			if reflect.TypeOf(o) == reflect.TypeOf(kind) {
				return o
			}
		}
		b.Fatalf("no %T in an app's plan", kind)
		return nil
	}
	create := func(o client.Object) error {
		form, err := userdeployment.ApplyForm(o)
		if err != nil {
			return err
		}
		return op.Create(ctx, form, client.FieldOwner(userdeployment.FieldOwner))
	}
	// Each Service's cluster IP is an IPAddress object, and allocating one
	// lists them all (ipallocator's Used): a Service create costs more the
	// more Services there are, 1 µs each. So each kind creates as many as
	// one side of BenchmarkUserDeployments, not thousands.
	const services = 200
	service := func(prefix string, i int) (client.Object, error) {
		if i >= services {
			return nil, errExhausted
		}
		return object(prefix, i, &corev1.Service{}), nil
	}
	direct := func(o client.Object) error {
		o.SetOwnerReferences(nil)
		testenv.Unreserve(o)
		return testenv.Apply(ctx, user, o, manager)
	}
	// The app's two status writes: Progressing once its objects are made,
	// Running once its pod is ready; all of the status each time, as the
	// first write sends it (conditions are a list, which a merge patch
	// replaces whole).
	statuses := make([][]byte, 2)
	for i, running := range []bool{false, true} {
		now := metav1.Now()
		st := schedv1.UserDeploymentStatus{ObservedGeneration: live.Generation, Phase: schedv1.UserDeploymentProgressing,
			Ready: "0/1", Services: []schedv1.ServiceStatus{{Name: "web"}}, CurrentRevision: 1, CurrentRevisionTime: &now,
			Conditions: []metav1.Condition{
				{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: schedv1.ReasonReconciling, Message: "web: 0/1 replicas ready", ObservedGeneration: 1, LastTransitionTime: now},
				{Type: schedv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: schedv1.ReasonReconciling, Message: "created Deployment web, Service web", ObservedGeneration: 1, LastTransitionTime: now},
				{Type: schedv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: schedv1.ReasonAsExpected, Message: "no problem found", ObservedGeneration: 1, LastTransitionTime: now},
			}}
		if running {
			st.Phase, st.Ready, st.Services[0].ReadyReplicas, st.LastRunningRevision = schedv1.UserDeploymentRunning, "1/1", 1, 1
			st.Conditions[0] = metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonAvailable, Message: "all 1 services ready", ObservedGeneration: 1, LastTransitionTime: now}
			st.Conditions[1].Status, st.Conditions[1].Reason, st.Conditions[1].Message = metav1.ConditionFalse, schedv1.ReasonAvailable, "up to date"
		}
		var err error
		if statuses[i], err = json.Marshal(map[string]any{"status": st}); err != nil {
			b.Fatal(err)
		}
	}
	return []costKind{
		{"user: apply a one-service app", func(i int) error { return testenv.Apply(ctx, user, app(fmt.Sprintf("a-%05d", i)), manager) }},
		{"operator: create an app's revision", func(i int) error {
			ud := named("r", i)
			cr := revision.New(ud, 1, revision.Of(ud), revision.ChangedBy(ud, nil))
			return op.Create(ctx, cr, client.FieldOwner(userdeployment.FieldOwner))
		}},
		{"operator: create an app's Deployment", func(i int) error { return create(object("d", i, &appsv1.Deployment{})) }},
		{"operator: create an app's Service", func(i int) error {
			o, err := service("s", i)
			if err != nil {
				return err
			}
			return create(o)
		}},
		{"operator: patch an app's status", func(i int) error {
			ud := &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Name: live.Name, Namespace: ns}}
			return op.Status().Patch(ctx, ud, client.RawPatch(types.MergePatchType, statuses[i%2]))
		}},
		{"operator: create an app's Running event", func(i int) error {
			// As controller-runtime's recorder (client-go's events.k8s.io
			// broadcaster) sends it.
			now := metav1.NowMicro()
			return op.Create(ctx, &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", live.Name, now.UnixNano()+int64(i)), Namespace: ns},
				Regarding:  corev1.ObjectReference{APIVersion: schedv1.GroupVersion.String(), Kind: "UserDeployment", Namespace: ns, Name: live.Name, UID: live.UID, ResourceVersion: live.ResourceVersion},
				EventTime:  now, Type: corev1.EventTypeNormal, Reason: schedv1.ReasonAvailable, Action: string(schedv1.UserDeploymentRunning),
				Note: "all 1 services ready", ReportingController: "userdeployment-controller", ReportingInstance: "userdeployment-controller-cost",
			})
		}},
		{"user: apply the app's Deployment", func(i int) error { return direct(object("ud", i, &appsv1.Deployment{})) }},
		{"user: apply the app's Service", func(i int) error {
			o, err := service("us", i)
			if err != nil {
				return err
			}
			return direct(o)
		}},
	}
}

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
