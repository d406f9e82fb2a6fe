package argo

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// observer records, from informers on the API server (watches, no
// polling), when each step's pod was created and when it ended (first
// seen Succeeded or Failed), and when each workflow finished; the same
// for both systems, which label pods and workflows alike (workloads_test.go).
// Objects are trimmed to what it reads.
type observer struct {
	mu         sync.Mutex
	podCreated map[string]time.Time // by workflow/step
	podEnded   map[string]time.Time
	wfDone     map[string]time.Time // by workflow name
	doneByRun  map[string]int
	failed     []string
}

// Workflow phases that are final, in either system.
var finalPhases = map[string]bool{"Succeeded": true, "Failed": true, "Error": true, "Timeout": true, "Cancelled": true}

func observe(ctx context.Context, cfg *rest.Config, ns string, workflows schema.GroupVersionResource) (*observer, error) {
	o := &observer{podCreated: map[string]time.Time{}, podEnded: map[string]time.Time{}, wfDone: map[string]time.Time{}, doneByRun: map[string]int{}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(l *metav1.ListOptions) { l.LabelSelector = labelWorkflow }))
	podInf := pods.Core().V1().Pods().Informer()
	if err := podInf.SetTransform(trimPod); err != nil {
		return nil, err
	}
	if _, err := podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.pod(obj, time.Now()) },
		UpdateFunc: func(_, obj any) { o.pod(obj, time.Now()) },
	}); err != nil {
		return nil, err
	}
	wfs := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	wfInf := wfs.ForResource(workflows).Informer()
	if err := wfInf.SetTransform(trimWorkflow); err != nil {
		return nil, err
	}
	if _, err := wfInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.workflow(obj, time.Now()) },
		UpdateFunc: func(_, obj any) { o.workflow(obj, time.Now()) },
	}); err != nil {
		return nil, err
	}
	pods.Start(ctx.Done())
	wfs.Start(ctx.Done())
	for _, synced := range []bool{toolscache.WaitForCacheSync(ctx.Done(), podInf.HasSynced), toolscache.WaitForCacheSync(ctx.Done(), wfInf.HasSynced)} {
		if !synced {
			return nil, fmt.Errorf("the benchmark's informers did not sync")
		}
	}
	return o, nil
}

// trimPod keeps a pod's name, labels and phase.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	t := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, ResourceVersion: p.ResourceVersion}}
	t.Status.Phase = p.Status.Phase
	return t, nil
}

// trimWorkflow keeps a workflow's name, labels and status.phase.
func trimWorkflow(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	t := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
	t.SetName(u.GetName())
	t.SetNamespace(u.GetNamespace())
	t.SetLabels(u.GetLabels())
	t.SetResourceVersion(u.GetResourceVersion())
	_ = unstructured.SetNestedField(t.Object, phase, "status", "phase")
	return t, nil
}

func stepKey(wf, step string) string { return wf + "/" + step }

func (o *observer) pod(obj any, at time.Time) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k := stepKey(p.Labels[labelWorkflow], p.Labels[labelStep])
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.podCreated[k]; !seen {
		o.podCreated[k] = at
	}
	if _, seen := o.podEnded[k]; !seen && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
		o.podEnded[k] = at
		if p.Status.Phase == corev1.PodFailed {
			o.fail("pod of " + k + " failed")
		}
	}
}

func (o *observer) workflow(obj any, at time.Time) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	if !finalPhases[phase] {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.wfDone[u.GetName()]; seen {
		return
	}
	o.wfDone[u.GetName()] = at
	o.doneByRun[u.GetLabels()[labelRun]]++
	if phase != "Succeeded" {
		o.fail(fmt.Sprintf("workflow %s %s", u.GetName(), phase))
	}
}

// fail notes something that did not succeed (o.mu held).
func (o *observer) fail(what string) {
	if len(o.failed) < 10 {
		o.failed = append(o.failed, what)
	}
}

func (o *observer) done(run string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.doneByRun[run]
}

// handoffs are the times from each step's pod ending to the pod of each
// step after it being created, over the workflows given; missing counts
// the pairs not both observed.
func (o *observer) handoffs(workflows []shape) (out []time.Duration, missing int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range workflows {
		for _, st := range s.steps {
			for _, from := range st.after {
				ended, created := o.podEnded[stepKey(s.name, from)], o.podCreated[stepKey(s.name, st.name)]
				if ended.IsZero() || created.IsZero() {
					missing++
					continue
				}
				out = append(out, created.Sub(ended))
			}
		}
	}
	return out, missing
}

// fanTimes are a fan's fan-out (the root's pod ending to the last
// branch's pod created) and fan-in (the last branch's pod ending to the
// join's pod created).
func (o *observer) fanTimes(s shape) (fanOut, fanIn time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	root := o.podEnded[stepKey(s.name, "root")]
	join := o.podCreated[stepKey(s.name, "join")]
	var lastCreated, lastEnded time.Time
	for _, st := range s.steps {
		if st.name == "root" || st.name == "join" {
			continue
		}
		c, e := o.podCreated[stepKey(s.name, st.name)], o.podEnded[stepKey(s.name, st.name)]
		if c.IsZero() || e.IsZero() {
			return 0, 0, fmt.Errorf("branch %s: pod created %v, ended %v", st.name, c, e)
		}
		lastCreated, lastEnded = later(lastCreated, c), later(lastEnded, e)
	}
	if root.IsZero() || join.IsZero() {
		return 0, 0, fmt.Errorf("root's pod ended %v, join's created %v", root, join)
	}
	return lastCreated.Sub(root), join.Sub(lastEnded), nil
}

// lastDone is when the last of the workflows named finished.
func (o *observer) lastDone(workflows []shape) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var t time.Time
	for _, s := range workflows {
		t = later(t, o.wfDone[s.name])
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
