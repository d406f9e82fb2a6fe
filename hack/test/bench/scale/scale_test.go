package scale

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// TestMain runs nothing unless benchmarks run, so `go test ./...` pays
// nothing for this package; the benchmark starts its own cluster.
func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// config is the run's size, from the environment (see docs/contributors/benchmarks.md):
// the defaults fit 15 minutes on two cores; the targets are
// SCALE_WORKFLOWS=5000 SCALE_TASKS=10000 SCALE_APPS=2000.
type config struct {
	workflows, tasks, apps int
	tenants, nodes         int
	replicas               int
	// submitters create objects at once, as that many clients.
	submitters int
	// idleSteps is the length of the workflow whose hand-offs are timed
	// before any load.
	idleSteps int
	// profileSeconds is how long the CPU profiles of the operator and the
	// API server run, from a few seconds into a phase.
	profileSeconds int
	// qps and burst are the operator's and the cluster's controllers'
	// client limits.
	qps, burst int
	// out keeps the profiles, the operators' logs and the audit log.
	out string
	// operatorArgs are more flags for each replica, space-separated in
	// SCALE_OPERATOR_ARGS (--max-concurrent-reconciles=30).
	operatorArgs []string
}

func loadConfig(b *testing.B) config {
	c := config{
		workflows: envInt(b, "SCALE_WORKFLOWS", 500), tasks: envInt(b, "SCALE_TASKS", 1000), apps: envInt(b, "SCALE_APPS", 200),
		tenants: envInt(b, "SCALE_TENANTS", 100), nodes: envInt(b, "SCALE_NODES", 210),
		replicas: envInt(b, "SCALE_REPLICAS", 1), submitters: envInt(b, "SCALE_SUBMITTERS", 20),
		idleSteps: envInt(b, "SCALE_IDLE_STEPS", 20), profileSeconds: envInt(b, "SCALE_PROFILE_SECONDS", 30),
		qps: envInt(b, "SCALE_QPS", 200), burst: envInt(b, "SCALE_BURST", 400),
		out: os.Getenv("SCALE_OUT"), operatorArgs: strings.Fields(os.Getenv("SCALE_OPERATOR_ARGS")),
	}
	if c.replicas < 1 || c.replicas > 2 || c.tenants < 1 || c.submitters < 1 || c.idleSteps < 2 {
		b.Fatalf("SCALE_REPLICAS must be 1 or 2, SCALE_TENANTS and SCALE_SUBMITTERS at least 1, SCALE_IDLE_STEPS at least 2: %+v", c)
	}
	if c.out == "" {
		dir, err := os.MkdirTemp("", "kubectl-sched-scale-")
		if err != nil {
			b.Fatal(err)
		}
		c.out = dir
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		b.Fatal(err)
	}
	return c
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q is not a whole number", name, v)
	}
	return n
}

// scaleNodes are n kwok nodes in three zones: two thirds general, one
// in seven highmem, the rest spot and GPU nodes behind their taints. Each
// takes 1,000 pods: finished pods count against a node until their Job
// goes.
func scaleNodes(n int) []cluster.Node {
	zones := []string{"a", "b", "c"}
	var out []cluster.Node
	add := func(pool string, count int, cpu, mem string, taint *corev1.Taint, extra map[string]string) {
		for i := range count {
			zone := zones[i%len(zones)]
			node := cluster.Node{
				Name:   fmt.Sprintf("%s-%s-%03d", pool, zone, i),
				Labels: map[string]string{cluster.LabelZone: "zone-" + zone, cluster.LabelPool: pool},
				CPU:    cpu, Memory: mem, Pods: 1000, ExtendedResources: extra,
			}
			if taint != nil {
				node.Taints = []corev1.Taint{*taint}
				node.Labels[taint.Key] = "true"
			}
			out = append(out, node)
		}
	}
	highmem, spot, gpu := max(n/7, 1), max(n/10, 1), max(n/20, 1)
	add("general", max(n-highmem-spot-gpu, 1), "8", "32Gi", nil, nil)
	add("highmem", highmem, "16", "128Gi", nil, nil)
	add("spot", spot, "4", "16Gi", &corev1.Taint{Key: cluster.TaintSpot, Value: "true", Effect: corev1.TaintEffectNoSchedule}, nil)
	add("gpu", gpu, "16", "64Gi", &corev1.Taint{Key: cluster.TaintGPU, Value: "present", Effect: corev1.TaintEffectNoSchedule}, map[string]string{"nvidia.com/gpu": "4"})
	return out
}

// tenant is a tenant namespace and the client its CI submits with: the
// namespace's service account ci, a member of the tenant (bound to
// kubectl-sched-tenant by tenant create) and, for the bare Jobs of the
// floor, bound to edit.
type tenant struct {
	ns, tier string
	client   client.Client
}

// Bench labels: on every pod the benchmark makes run, through a task's
// podMetadata or a bare Job's template.
const (
	labelRun   = "bench.example.com/run"
	labelChain = "bench.example.com/chain"
	labelStep  = "bench.example.com/step"
)

// quick makes a simulated pod finish at once with the output out=ok.
var quick = map[string]string{cluster.AnnotationRunSeconds: "0", cluster.AnnotationExitCode: "0", cluster.AnnotationTerminationMessage: "out=ok"}

// small is what each container asks for, so that no tier's CPU or memory
// quota (a LimitRange's defaults, 500m and up, would fill them) binds
// before the pods count does.
var small = schedv1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
}

type bench struct {
	b       *testing.B
	cfg     config
	ctx     context.Context
	sim     *testenv.Sim
	cs      kubernetes.Interface
	admin   client.Client
	bins    string
	ops     []*operator
	tenants []*tenant
	// slots spreads objects over the tenants by tier: an enterprise
	// namespace takes four times a team namespace's share.
	slots    []*tenant
	auditLog string
	obs      *observer
	phases   []*phase
	// profiling waits for the profiles still being taken.
	profiling sync.WaitGroup
	// asyncErr is the first error of the floor's script.
	asyncErr atomic.Pointer[error]
}

// BenchmarkScale is the scale benchmark; see the package comment and
// docs/contributors/benchmarks.md. Sizes come from the environment (loadConfig).
//
//	make bench-scale
//	SCALE_WORKFLOWS=5000 SCALE_TASKS=10000 SCALE_APPS=2000 make bench-scale
func BenchmarkScale(b *testing.B) {
	for range b.N {
		runScale(b, loadConfig(b))
	}
}

func runScale(b *testing.B, cfg config) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &bench{b: b, cfg: cfg, ctx: ctx}
	began := time.Now()
	s.start()
	defer s.stop()
	s.startOperators()
	s.makeTenants()
	s.obs = observe(b, ctx, s.sim.Config, s)

	s.idleHandoff()
	s.runApps()
	s.runWorkflows(true)
	s.runWorkflows(false)
	s.runTasks(true)
	s.runTasks(false)
	s.settle()
	s.printReport(time.Since(began))
}

// start runs the cluster (the audit policy on), builds the plugin and the
// operator, and installs as `kubectl sched install --without-operator`.
func (s *bench) start() {
	b := s.b
	args, log, err := auditArgs(s.cfg.out)
	if err != nil {
		b.Fatal(err)
	}
	s.auditLog = log
	limits := []string{fmt.Sprintf("--kube-api-qps=%d", s.cfg.qps), fmt.Sprintf("--kube-api-burst=%d", s.cfg.burst)}
	began := time.Now()
	s.sim, err = testenv.StartBareSim(cluster.Options{
		Nodes:                      scaleNodes(s.cfg.nodes),
		ExtraControllerManagerArgs: limits,
		ExtraSchedulerArgs:         limits,
		ExtraAPIServerArgs:         args,
	})
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "[scale] cluster of %d kwok nodes up in %v\n", s.cfg.nodes, time.Since(began).Round(time.Second))
	cfg := rest.CopyConfig(s.sim.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	if s.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		b.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	if s.bins, err = tour.SharedBinDir(nil); err != nil {
		b.Fatal(err)
	}
	build := &tour.Env{Root: root, Dir: s.cfg.out, BinDir: s.bins, Kubeconfig: s.sim.Kubeconfig, Cluster: s.sim.Cluster, Log: os.Stderr}
	if err := build.Build(s.ctx); err != nil {
		b.Fatal(err)
	}
	s.plugin("install", "--without-operator")
	// The new kinds are served now.
	if s.admin, err = client.New(cfg, client.Options{Scheme: app.Scheme()}); err != nil {
		b.Fatal(err)
	}
}

func (s *bench) stop() {
	for _, op := range s.ops {
		_ = op.env.StopOperator()
	}
	if s.sim != nil {
		_ = s.sim.Stop(s.b.Failed())
	}
	fmt.Fprintf(os.Stderr, "[scale] profiles, operator logs and the audit log are in %s\n", s.cfg.out)
}

// plugin runs the built kubectl-sched as the cluster's admin.
func (s *bench) plugin(args ...string) string {
	cmd := exec.CommandContext(s.ctx, filepath.Join(s.bins, "kubectl-sched"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.sim.Kubeconfig, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.b.Fatalf("kubectl sched %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeTenants creates the tenants as `kubectl sched tenant create` does,
// ten at a time, each waiting until its quota is counted. Every fifth is
// enterprise, the rest team.
func (s *bench) makeTenants() {
	began := time.Now()
	s.tenants = make([]*tenant, s.cfg.tenants)
	var wg sync.WaitGroup
	limit := make(chan struct{}, 10)
	for i := range s.tenants {
		t := &tenant{ns: fmt.Sprintf("tenant-%03d", i), tier: "team"}
		if i%5 == 0 {
			t.tier = "enterprise"
		}
		s.tenants[i] = t
		wg.Go(func() {
			limit <- struct{}{}
			defer func() { <-limit }()
			s.plugin("tenant", "create", t.ns, "--tier", t.tier, "--user", "system:serviceaccount:"+t.ns+":ci")
		})
	}
	wg.Wait()
	for _, t := range s.tenants {
		s.tenantClient(t)
		weight := 1
		if t.tier == "enterprise" {
			weight = 4
		}
		for range weight {
			s.slots = append(s.slots, t)
		}
	}
	fmt.Fprintf(os.Stderr, "[scale] %d tenants in %v\n", len(s.tenants), time.Since(began).Round(time.Second))
}

// tenantClient makes the namespace's service account ci, binds it to edit
// (for the bare Jobs), and a client with a token of it.
func (s *bench) tenantClient(t *tenant) {
	b, ctx := s.b, s.ctx
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: t.ns}}
	if err := s.admin.Create(ctx, sa); err != nil {
		b.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ci-edit", Namespace: t.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ci", Namespace: t.ns}},
	}
	if err := s.admin.Create(ctx, rb); err != nil {
		b.Fatal(err)
	}
	tok, err := s.cs.CoreV1().ServiceAccounts(t.ns).CreateToken(ctx, "ci", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(s.sim.Config)
	cfg.BearerToken = tok.Status.Token
	cfg.QPS, cfg.Burst = 1000, 2000
	if t.client, err = client.New(cfg, client.Options{Scheme: app.Scheme(), Mapper: s.admin.RESTMapper()}); err != nil {
		b.Fatal(err)
	}
}

// submit creates n objects, built by build(i) in tenant slot(i)'s
// namespace, with cfg.submitters clients at once, and returns when all
// are created.
func (s *bench) submit(n int, build func(i int, t *tenant) client.Object) {
	err := testenv.ForEach(s.cfg.submitters, n, func(i int) error {
		t := s.slot(i)
		return createRetrying(s.ctx, t.client, build(i, t))
	})
	if err != nil {
		s.b.Fatal(err)
	}
}

func (s *bench) slot(i int) *tenant { return s.slots[i%len(s.slots)] }

// createRetrying creates obj, retrying what a busy server may answer (too
// many requests, a timeout, a conflict on the namespace's quota) as a
// script would.
func createRetrying(ctx context.Context, c client.Client, obj client.Object) error {
	var err error
	for attempt := range 10 {
		if err = c.Create(ctx, obj); err == nil || apierrors.IsAlreadyExists(err) && attempt > 0 {
			return nil
		}
		if !retriable(err) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return fmt.Errorf("create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
}

func retriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsInternalError(err) || strings.Contains(err.Error(), "connection reset")
}

// idleHandoff runs one workflow of cfg.idleSteps steps on the idle
// cluster: the hand-off the first target is about.
func (s *bench) idleHandoff() {
	t := s.tenants[0]
	wf := MakeWorkflow("idle", t.ns)
	var steps []string
	for i := range s.cfg.idleSteps {
		var args []string
		if i > 0 {
			args = []string{fmt.Sprintf("${steps.s%d.output.out}", i-1)}
		}
		steps = append(steps, fmt.Sprintf("s%d", i))
		wf.StepTask(steps[i], stepTask("idle", args...))
	}
	p := s.begin("idle", "workflow", 1)
	if err := createRetrying(s.ctx, t.client, labelled(wf.Obj(), "idle")); err != nil {
		s.b.Fatal(err)
	}
	s.waitFor("the idle workflow", func() bool { return s.obs.workflowsDone("idle") == 1 })
	s.end(p)
	p.handoffs = s.obs.operatorHandoffs(t.ns, "idle", steps)
}

// labelled labels a workflow with its run.
func labelled(wf *schedv1.Workflow, run string) *schedv1.Workflow {
	wf.Labels = map[string]string{labelRun: run}
	return wf
}

// stepTask is a task that finishes at once with out=ok, labelled run.
func stepTask(run string, args ...string) schedv1.AgentTaskSpec {
	return schedv1.AgentTaskSpec{Image: "registry.example.com/step:1", Args: args, Resources: small,
		PodMetadata: &schedv1.PodMetadata{Labels: map[string]string{labelRun: run}, Annotations: quick}}
}

// runApps creates cfg.apps apps of two services and waits until all run.
func (s *bench) runApps() {
	if s.cfg.apps == 0 {
		return
	}
	p := s.begin("apps", "app", s.cfg.apps)
	s.submit(s.cfg.apps, func(i int, t *tenant) client.Object { return userDeployment(i, t.ns) })
	p.created = time.Since(p.start)
	s.waitFor("the apps to run", func() bool { return s.obs.appsRunning() >= s.cfg.apps })
	s.end(p)
}

// userDeployment is the web-app template's shape: a public web service
// and an internal API, one replica each, and a config entry.
func userDeployment(i int, ns string) client.Object {
	name := fmt.Sprintf("app-%04d", i)
	return MakeUserDeployment(name, ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
		Service("api", "ghcr.io/example/shop-api:1.4.0", 8080, schedv1.ExposureInternal).
		EditService("web", func(s *schedv1.ServiceSpec) {
			s.Env = []schedv1.EnvVar{{Name: "API_URL", Value: "http://" + name + "-api:8080"}}
			s.Resources = small
		}).
		EditService("api", func(s *schedv1.ServiceSpec) { s.Resources = small }).
		Config("LOG_LEVEL", "info").
		Obj()
}

// runWorkflows queues cfg.workflows workflows of three steps, each
// passing its output to the next, at once, and waits until all are done:
// through the operator, or (floor) as chains of bare Jobs that the
// benchmark creates one after another as a script would, each as soon as
// the pod before it succeeded, with its output in the arguments.
func (s *bench) runWorkflows(floor bool) {
	n := s.cfg.workflows
	if n == 0 {
		return
	}
	if floor {
		p := s.begin("floor-workflows", "workflow", n)
		s.obs.floor = newFloorDriver(s)
		s.submit(n, func(i int, t *tenant) client.Object { return chainJob(i, 0, t.ns, "") })
		p.created = time.Since(p.start)
		s.waitFor("the bare-Job chains", func() bool { return s.obs.chainsDone() >= n })
		s.end(p)
		p.handoffs = s.obs.floorHandoffs(n, s.slot)
		return
	}
	p := s.begin("workflows", "workflow", n)
	s.profile(p)
	s.submit(n, func(i int, t *tenant) client.Object {
		return labelled(MakeWorkflow(fmt.Sprintf("wf-%05d", i), t.ns).
			StepTask("build", stepTask("workflows")).
			StepTask("test", stepTask("workflows", "${steps.build.output.out}")).
			StepTask("ship", stepTask("workflows", "${steps.test.output.out}")).
			Obj(), "workflows")
	})
	p.created = time.Since(p.start)
	s.waitFor("the workflows", func() bool { return s.obs.workflowsDone("workflows") >= n })
	s.end(p)
	for i := range n {
		p.handoffs.add(s.obs.operatorHandoffs(s.slot(i).ns, fmt.Sprintf("wf-%05d", i), []string{"build", "test", "ship"}))
	}
}

// chainJob is step `step` of the bare-Job chain i: the Job an AgentTask
// of stepTask would make, less the operator's labels, owner and outputs
// finalizer.
func chainJob(i, step int, ns, input string) *batchv1.Job {
	var args []string
	if input != "" {
		args = []string{input}
	}
	j := bareJob(chainName(i, step), ns, "floor-workflows", args)
	for _, l := range []map[string]string{j.Labels, j.Spec.Template.Labels} {
		l[labelChain], l[labelStep] = strconv.Itoa(i), strconv.Itoa(step)
	}
	return j
}

func bareJob(name, ns, run string, args []string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{labelRun: run}},
		Spec: batchv1.JobSpec{
			BackoffLimit:         ptr.To[int32](0),
			PodReplacementPolicy: ptr.To(batchv1.Failed),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelRun: run}, Annotations: quick},
				Spec: corev1.PodSpec{
					RestartPolicy:   corev1.RestartPolicyNever,
					SecurityContext: podsecurity.Pod(),
					Containers: []corev1.Container{{
						Name: "task", Image: "registry.example.com/step:1", Args: args,
						Resources:                small.Core(),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext:          podsecurity.Container(nil),
					}},
				},
			},
		},
	}
}

// runTasks queues cfg.tasks standalone tasks at once, as AgentTasks or
// (floor) as bare Jobs, and waits until all are done.
func (s *bench) runTasks(floor bool) {
	n := s.cfg.tasks
	if n == 0 {
		return
	}
	if floor {
		p := s.begin("floor-tasks", "task", n)
		s.profile(p)
		s.submit(n, func(i int, t *tenant) client.Object {
			return bareJob(fmt.Sprintf("job-%05d", i), t.ns, "floor-tasks", nil)
		})
		p.created = time.Since(p.start)
		s.waitFor("the bare Jobs", func() bool { return s.obs.jobsDone("floor-tasks") >= n })
		s.end(p)
		return
	}
	p := s.begin("tasks", "task", n)
	s.profile(p)
	s.submit(n, func(i int, t *tenant) client.Object {
		spec := stepTask("tasks")
		return MakeAgentTask(fmt.Sprintf("task-%05d", i), t.ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = spec }).Obj()
	})
	p.created = time.Since(p.start)
	s.waitFor("the tasks", func() bool { return s.obs.tasksDone("tasks") >= n })
	s.end(p)
}

// waitFor polls cond (in-memory counts, no requests) for up to an hour,
// and fails on the first error of the floor's script.
func (s *bench) waitFor(what string, cond func() bool) {
	err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, time.Hour, true, func(context.Context) (bool, error) {
		if err := s.asyncErr.Load(); err != nil {
			return false, *err
		}
		return cond(), nil
	})
	if err != nil {
		s.b.Fatalf("waiting for %s: %v", what, err)
	}
}
