package argo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

// The executor emulation. An Argo step's pod runs the step's container and
// Argo's executor beside it (the wait container), which reports the step's
// outputs to the controller through a WorkflowTaskResult named after the
// pod's node ID: it creates the result empty when it starts
// (InitializeOutput), merge-patches the outputs in once the step's
// container has ended (ReportOutputs), then sets the label
// report-outputs-completed to "true" (FinalizeOutput), and only then does
// the pod end. The controller does not finish a step that declares outputs
// until they are reported, nor a workflow while a result is incomplete.
//
// kwok runs no container, so this process does the same three writes for
// every Argo pod once kwok has it Running, in that order, and then lets
// kwok end the pod (it adds the simulation annotations kwok's pod-complete
// stage waits for). That last patch stands in for the kubelet seeing the
// containers exit, not for anything Argo does: the benchmark counts it and
// takes it out of Argo's writes. The emulation runs as its own process, so
// its CPU time is measured apart and counted as Argo's.

// Argo's names (workflow/common in Argo's module).
const (
	argoLabelWorkflow        = "workflows.argoproj.io/workflow"
	argoLabelOutputsComplete = "workflows.argoproj.io/report-outputs-completed"
	argoAnnotationNodeID     = "workflows.argoproj.io/node-id"
)

var taskResultGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowtaskresults"}

// Environment of the emulation's process: it runs when emulatorKubeconfig
// is set (the test binary started again by startEmulator).
const (
	emulatorKubeconfig = "ARGO_BENCH_EMULATE_KUBECONFIG"
	emulatorNamespace  = "ARGO_BENCH_EMULATE_NAMESPACE"
	emulatorWorkers    = "ARGO_BENCH_EMULATE_WORKERS"
)

// emulatorCounts is what the emulation reports when it stops.
type emulatorCounts struct {
	Pods         int64  `json:"pods"`         // pods whose three writes were done
	ResultWrites int64  `json:"resultWrites"` // WorkflowTaskResult creates and patches sent
	PodReleases  int64  `json:"podReleases"`  // pod patches letting kwok end a pod
	FailedWrites int64  `json:"failedWrites"` // requests that failed (each retried)
	FirstError   string `json:"firstError"`
}

// runEmulator is the emulation's process: it runs until SIGTERM, then
// prints its counts as JSON on stdout.
func runEmulator() int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(emulatorKubeconfig))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Each real wait container has a client of its own: no shared budget.
	cfg.QPS, cfg.Burst = 5000, 10000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	workers := 50
	_, _ = fmt.Sscan(os.Getenv(emulatorWorkers), &workers)
	ns := os.Getenv(emulatorNamespace)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	e := &emulator{cs: cs, results: dyn.Resource(taskResultGVR).Namespace(ns), seen: map[types.UID]bool{},
		queue: workqueue.NewTyped[*corev1.Pod]()}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = argoLabelWorkflow }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    e.observe,
		UpdateFunc: func(_, obj any) { e.observe(obj) },
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				p, shutdown := e.queue.Get()
				if shutdown {
					return
				}
				e.report(ctx, p)
				e.queue.Done(p)
			}
		})
	}
	fmt.Fprintln(os.Stderr, "executor emulation ready")
	<-ctx.Done()
	e.queue.ShutDown()
	wg.Wait()
	out, _ := json.Marshal(e.counts())
	fmt.Println(string(out))
	return 0
}

type emulator struct {
	cs      kubernetes.Interface
	results dynamic.ResourceInterface
	mu      sync.Mutex
	seen    map[types.UID]bool
	queue   workqueue.TypedInterface[*corev1.Pod]

	pods, resultWrites, podReleases, failed atomic.Int64
	firstErr                                atomic.Pointer[string]
}

func (e *emulator) counts() emulatorCounts {
	c := emulatorCounts{Pods: e.pods.Load(), ResultWrites: e.resultWrites.Load(), PodReleases: e.podReleases.Load(), FailedWrites: e.failed.Load()}
	if s := e.firstErr.Load(); s != nil {
		c.FirstError = *s
	}
	return c
}

// observe queues each Argo pod once, when it first runs: the wait
// container has started.
func (e *emulator) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen[p.UID] {
		return
	}
	e.seen[p.UID] = true
	e.queue.Add(p)
}

// report makes the wait container's three writes for pod p, then lets
// kwok end it.
func (e *emulator) report(ctx context.Context, p *corev1.Pod) {
	nodeID, wf := p.Annotations[argoAnnotationNodeID], p.Labels[argoLabelWorkflow]
	var owner *metav1.OwnerReference
	for i, o := range p.OwnerReferences {
		if o.Kind == "Workflow" {
			owner = &p.OwnerReferences[i]
		}
	}
	if nodeID == "" || owner == nil {
		e.fail(fmt.Errorf("pod %s has no node ID or Workflow owner", p.Name))
		return
	}
	result := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "WorkflowTaskResult",
		"metadata": map[string]any{
			"name":            nodeID,
			"labels":          map[string]any{argoLabelWorkflow: wf, argoLabelOutputsComplete: "false"},
			"ownerReferences": []any{map[string]any{"apiVersion": owner.APIVersion, "kind": owner.Kind, "name": owner.Name, "uid": string(owner.UID)}},
		},
	}}
	outputs := map[string]any{}
	if v, ok := p.Annotations[annotationOutput]; ok {
		outputs["parameters"] = []any{map[string]any{"name": "out", "value": v}}
	}
	outputsPatch, _ := json.Marshal(map[string]any{"outputs": outputs})
	labelPatch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{argoLabelOutputsComplete: "true"}}})
	release, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		cluster.AnnotationRunSeconds: "0", cluster.AnnotationExitCode: "0"}}})
	steps := []func() error{
		func() error {
			_, err := e.results.Create(ctx, result, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		},
		func() error {
			_, err := e.results.Patch(ctx, nodeID, types.MergePatchType, outputsPatch, metav1.PatchOptions{})
			return err
		},
		func() error {
			_, err := e.results.Patch(ctx, nodeID, types.MergePatchType, labelPatch, metav1.PatchOptions{})
			return err
		},
	}
	for _, do := range steps {
		if !e.retry(ctx, do) {
			return
		}
		e.resultWrites.Add(1)
	}
	e.pods.Add(1)
	if e.retry(ctx, func() error {
		_, err := e.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, release, metav1.PatchOptions{})
		return err
	}) {
		e.podReleases.Add(1)
	}
}

// retry retries do as the executor does a transient error, for up to a
// minute; false when it never succeeded.
func (e *emulator) retry(ctx context.Context, do func() error) bool {
	deadline := time.Now().Add(time.Minute)
	for {
		err := do()
		if err == nil {
			return true
		}
		e.failed.Add(1)
		if ctx.Err() != nil || time.Now().After(deadline) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			e.fail(err)
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *emulator) fail(err error) {
	s := err.Error()
	e.firstErr.CompareAndSwap(nil, &s)
}

// emulatorProcess is the emulation running as a child of the benchmark.
type emulatorProcess struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	done   chan struct{} // closed once the process is reaped
}

// startEmulator starts this test binary again as the executor emulation
// for namespace ns, its log in logPath, and waits until it is ready.
func startEmulator(kubeconfig, ns string, workers int, logPath string) (*emulatorProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &emulatorProcess{cmd: exec.Command(self, "-test.run=^$"), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), emulatorKubeconfig+"="+kubeconfig, emulatorNamespace+"="+ns, fmt.Sprintf("%s=%d", emulatorWorkers, workers))
	p.cmd.Stdout = &p.stdout
	pr, pw := io.Pipe()
	p.cmd.Stderr = pw
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		defer logf.Close()
		buf := make([]byte, 4096)
		var once sync.Once
		for {
			n, err := pr.Read(buf)
			_, _ = logf.Write(buf[:n])
			if strings.Contains(string(buf[:n]), "executor emulation ready") {
				once.Do(func() { close(ready) })
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { _ = p.cmd.Wait(); pw.Close(); close(p.done) }()
	select {
	case <-ready:
		return p, nil
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		return nil, fmt.Errorf("the executor emulation was not ready within a minute; see %s", logPath)
	}
}

func (p *emulatorProcess) pid() int { return p.cmd.Process.Pid }

// stop ends the emulation and returns its counts.
func (p *emulatorProcess) stop() (emulatorCounts, error) {
	var c emulatorCounts
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return c, fmt.Errorf("the executor emulation did not stop within 30s")
	}
	err := json.Unmarshal([]byte(strings.TrimSpace(p.stdout.String())), &c)
	return c, err
}
