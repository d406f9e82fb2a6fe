package argo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// BenchmarkArgoSideBySide runs the same work through each system of
// ARGO_BENCH_SYSTEMS (Argo as shipped, Argo tuned, kubectl-sched), each on
// a fresh simulated cluster that is stopped before the next starts, and
// prints the side-by-side table. Sizes come from the environment
// (loadConfig).
//
//	make bench-argo
//	ARGO_BENCH_CHAIN=5 ARGO_BENCH_WORKFLOWS=50 ARGO_BENCH_ONE_STEP=50 make bench-argo
func BenchmarkArgoSideBySide(b *testing.B) {
	for range b.N {
		cfg := loadConfig(b)
		began := time.Now()
		var results []*run
		for _, sys := range cfg.systems {
			results = append(results, runSystem(b, cfg, sys))
			// What is done so far, in case a later system does not finish.
			writeReport(cfg, results, time.Since(began))
		}
		fmt.Print(writeReport(cfg, results, time.Since(began)))
		fmt.Fprintf(os.Stderr, "[argo-bench] the report, the controllers' logs and the emulation's log are in %s\n", cfg.out)
	}
}

// run is one system's run on its own cluster.
type run struct {
	b      *testing.B
	cfg    config
	system string
	dir    string
	ctx    context.Context

	sim    *testenv.Sim
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	client client.Client // for kubectl-sched's kinds

	controllerPID  int
	controllerArgs string
	emu            *emulatorProcess
	emuCounts      emulatorCounts
	obs            *observer
	cleanups       []func()

	began   time.Time
	elapsed time.Duration
	load    string // /proc/loadavg at the end
	phases  []*phase
}

// phase is one piece of the work and what it cost.
type phase struct {
	name      string
	workflows []shape
	steps     int
	start     time.Time
	allDone   time.Time // the last workflow finished
	end       time.Time // the cluster quiet again
	cpu0, cpu map[string]time.Duration
	api0, api testenv.Samples
	handoffs  []time.Duration
	missing   int
	fanOut    time.Duration
	fanIn     time.Duration
}

func runSystem(b *testing.B, cfg config, system string) *run {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &run{b: b, cfg: cfg, system: system, dir: filepath.Join(cfg.out, system), ctx: ctx, began: time.Now()}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "[argo-bench] %s: starting a fresh cluster\n", system)
	r.startCluster()
	defer r.stop()
	if system == kubectlSched {
		r.startSched()
	} else {
		r.startArgo(system == argoTuned)
	}
	var err error
	if r.obs, err = observe(ctx, r.adminConfig(), benchNamespace, workflowsGVR(system)); err != nil {
		b.Fatal(err)
	}

	idle := r.runPhase("idle chain", []shape{chain("chain", "chain", cfg.chain)})
	idle.handoffs, idle.missing = r.obs.handoffs(idle.workflows)

	f := fan("fan", "fan", cfg.fan)
	fp := r.runPhase("fan", []shape{f})
	if fp.fanOut, fp.fanIn, err = r.obs.fanTimes(f); err != nil {
		b.Fatalf("%s fan: %v", system, err)
	}

	var load []shape
	for i := range cfg.workflows {
		load = append(load, threeStep(fmt.Sprintf("load-%05d", i), "load"))
	}
	if len(load) > 0 {
		lp := r.runPhase("three-step", load)
		lp.handoffs, lp.missing = r.obs.handoffs(load)
	}

	var one []shape
	for i := range cfg.oneStep {
		one = append(one, oneStep(fmt.Sprintf("one-%05d", i), "one"))
	}
	if len(one) > 0 {
		r.runPhase("one-step", one)
	}
	r.elapsed = time.Since(r.began)
	load1, _ := os.ReadFile("/proc/loadavg")
	r.load = string(load1)
	return r
}

// startCluster starts a fresh simulated cluster: the default nodes, each
// taking 2,000 pods (neither system deletes a finished step's pod by
// default), and the controller manager and scheduler allowed 200
// requests a second, as in make bench-scale, so that they are not the
// bottleneck.
func (r *run) startCluster() {
	nodes := cluster.DefaultNodes()
	for i := range nodes {
		nodes[i].Pods = 2000
	}
	limits := []string{"--kube-api-qps=200", "--kube-api-burst=400"}
	var err error
	r.sim, err = testenv.StartBareSim(cluster.Options{Nodes: nodes, ExtraControllerManagerArgs: limits, ExtraSchedulerArgs: limits})
	if err != nil {
		r.b.Fatal(err)
	}
	cfg := r.adminConfig()
	if r.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		r.b.Fatal(err)
	}
	if r.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		r.b.Fatal(err)
	}
}

// adminConfig is the cluster admin's, with limits that never hold the
// benchmark's clients back.
func (r *run) adminConfig() *rest.Config {
	cfg := rest.CopyConfig(r.sim.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg
}

// stop stops the controller, the emulation and the cluster, so that
// nothing of this system runs when the next starts.
func (r *run) stop() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	if r.emu != nil {
		c, err := r.emu.stop()
		if err != nil {
			fmt.Fprintf(os.Stderr, "[argo-bench] executor emulation: %v\n", err)
		}
		r.emuCounts = c
	}
	if r.sim != nil {
		_ = r.sim.Stop(r.b.Failed())
	}
}

// pids are the processes whose CPU time each phase counts.
func (r *run) pids() map[string]int {
	out := r.sim.PIDs()
	out["controller"] = r.controllerPID
	if r.emu != nil {
		out["executor emulation"] = r.emu.pid()
	}
	out["benchmark"] = os.Getpid()
	return out
}

// runPhase submits the workflows from cfg.clients clients at once, waits
// until all have finished, then until the cluster is quiet (the systems'
// clean-up after a workflow counts), and records what it cost.
func (r *run) runPhase(name string, workflows []shape) *phase {
	b := r.b
	p := &phase{name: name, workflows: workflows, cpu0: map[string]time.Duration{}}
	for _, s := range workflows {
		p.steps += len(s.steps)
	}
	run := workflows[0].run
	before := r.obs.done(run)
	fmt.Fprintf(os.Stderr, "[argo-bench] %s: %s, %d workflows, %d steps\n", r.system, name, len(workflows), p.steps)
	for n, pid := range r.pids() {
		p.cpu0[n] = testenv.ProcessCPU(pid)
	}
	p.api0 = r.scrapeAPI()
	p.start = time.Now()
	err := testenv.ForEach(r.cfg.clients, len(workflows), func(i int) error { return r.submit(workflows[i]) })
	if err != nil {
		b.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(r.ctx, 50*time.Millisecond, time.Hour, true, func(context.Context) (bool, error) {
		return r.obs.done(run)-before >= len(workflows), nil
	})
	if err != nil {
		b.Fatalf("%s: waiting for %d workflows: %v (%d finished)", r.system, len(workflows), err, r.obs.done(run)-before)
	}
	p.allDone = r.obs.lastDone(workflows)
	r.obs.mu.Lock()
	failed := r.obs.failed
	r.obs.mu.Unlock()
	if len(failed) > 0 {
		b.Fatalf("%s: %s: not succeeded: %s (logs in %s)", r.system, name, strings.Join(failed, "; "), r.dir)
	}
	r.settle()
	p.end = time.Now()
	p.cpu = map[string]time.Duration{}
	for n, pid := range r.pids() {
		p.cpu[n] = testenv.ProcessCPU(pid) - p.cpu0[n]
	}
	p.api = testenv.MetricsDelta(r.scrapeAPI(), p.api0)
	r.phases = append(r.phases, p)
	return p
}

// submit creates workflow s, retrying what a busy server may answer.
func (r *run) submit(s shape) error {
	var err error
	for attempt := range 10 {
		if r.system == kubectlSched {
			if r.client == nil {
				return fmt.Errorf("no client for kubectl-sched's kinds")
			}
			err = r.client.Create(r.ctx, s.schedWorkflow(benchNamespace))
		} else {
			_, err = r.dyn.Resource(argoWorkflowGVR).Namespace(benchNamespace).Create(r.ctx, s.argoWorkflow(benchNamespace), metav1.CreateOptions{})
		}
		if err == nil || apierrors.IsAlreadyExists(err) && attempt > 0 {
			return nil
		}
		if !apierrors.IsTooManyRequests(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) && !apierrors.IsInternalError(err) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return fmt.Errorf("create workflow %s: %w", s.name, err)
}

func (r *run) scrapeAPI() testenv.Samples {
	m, err := testenv.ScrapeAPIServerMetrics(r.ctx, r.cs)
	if err != nil {
		r.b.Fatal(err)
	}
	return m
}

// writes is the API server's count of writes (creates, updates, patches,
// deletes, applies) from every client, the nodes' and leases' heartbeats
// aside, by resource.
func writes(m testenv.Samples) map[string]float64 {
	out := map[string]float64{}
	for _, x := range m["apiserver_request_total"] {
		switch x.Labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		res := x.Labels["resource"]
		if res == "nodes" || res == "leases" {
			continue
		}
		if sub := x.Labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		if x.Labels["verb"] == "DELETE" {
			res += " deletes"
		}
		out[res] += x.Value
	}
	return out
}

func total(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// settle waits until no write reaches the API server for three seconds in
// a row (at most two minutes).
func (r *run) settle() {
	last, quiet := -1.0, 0
	_ = wait.PollUntilContextTimeout(r.ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		n := total(writes(r.scrapeAPI()))
		if n == last {
			quiet++
		} else {
			quiet = 0
		}
		last = n
		return quiet >= 3, nil
	})
}
