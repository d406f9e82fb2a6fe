package scope_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/scope"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

const servedLabel = "scope.example.org/served"

// requests records the paths the cache lists and watches.
type requests struct {
	mu    sync.Mutex
	paths []string
}

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (r *requests) of(resource string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.paths {
		if strings.HasSuffix(p, "/"+resource) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// events records what a handler of the AgentTask informer was told.
type events struct {
	mu  sync.Mutex
	got map[string]string // namespace/name -> "add" or "delete"
}

func (e *events) handler() toolscache.ResourceEventHandler {
	set := func(obj any, what string) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o := obj.(client.Object)
		e.mu.Lock()
		defer e.mu.Unlock()
		e.got[o.GetNamespace()+"/"+o.GetName()] = what
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, "add") },
		DeleteFunc: func(obj any) { set(obj, "delete") },
	}
}

func (e *events) snapshot() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for k, v := range e.got {
		out[k] = v
	}
	return out
}

// TestCacheFollowsTheSelection: the cache lists and watches only the
// namespaces the selector picks (and the ones always served), never a
// namespaced kind across the cluster; reads elsewhere find nothing; a
// namespace labelled while it runs is taken up, its objects arriving as
// creates, indexes and handlers included; one unlabelled is let go, its
// objects leaving as deletes.
func TestCacheFollowsTheSelection(t *testing.T) {
	ctx := t.Context()
	c := env.Client
	served, other, always := testenv.Namespace(t, c), testenv.Namespace(t, c), testenv.Namespace(t, c)
	label(t, served, "true")
	for _, ns := range []string{served, other, always} {
		for _, name := range []string{"a", "b"} {
			if err := c.Create(ctx, MakeAgentTask(name, ns).Image("busybox").Obj()); err != nil {
				t.Fatal(err)
			}
		}
	}

	rec := &requests{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(rec.wrap)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{servedLabel: "true"})
	sc, err := scope.New(cfg, cache.Options{Scheme: app.Scheme(), Mapper: mapper, HTTPClient: httpClient}, scope.Options{Selector: sel, Always: []string{always}})
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the start, as the controllers' indexes are.
	const byImage = "byImage"
	if err := sc.IndexField(ctx, &schedv1.AgentTask{}, byImage, func(o client.Object) []string {
		return []string{o.(*schedv1.AgentTask).Spec.Image}
	}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sc.Start(cctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the cache stopped with an error: %v", err)
		}
	})
	if !sc.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	inf, err := sc.GetInformer(ctx, &schedv1.AgentTask{})
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{got: map[string]string{}}
	if _, err := inf.AddEventHandler(ev.handler()); err != nil {
		t.Fatal(err)
	}

	cached := func() []string {
		var list schedv1.AgentTaskList
		if err := sc.List(ctx, &list, client.MatchingFields{byImage: "busybox"}); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, task := range list.Items {
			out = append(out, task.Namespace+"/"+task.Name)
		}
		slices.Sort(out)
		return out
	}
	tasks := func(namespaces ...string) []string {
		var out []string
		for _, ns := range namespaces {
			out = append(out, ns+"/a", ns+"/b")
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff(tasks(served, always), cached()); diff != "" {
		t.Errorf("cached tasks (-want +got):\n%s", diff)
	}
	path := func(ns string) string {
		return "/apis/sched.kubectl-sched.dev/v1alpha1/namespaces/" + ns + "/agenttasks"
	}
	if diff := cmp.Diff(sortedOf(path(always), path(served)), rec.of("agenttasks")); diff != "" {
		t.Errorf("the cache asked for AgentTasks (-want +got):\n%s", diff)
	}
	err = sc.Get(ctx, client.ObjectKey{Namespace: other, Name: "a"}, &schedv1.AgentTask{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a task in a namespace not served: got %v, want NotFound", err)
	}
	var inOther schedv1.AgentTaskList
	if err := sc.List(ctx, &inOther, client.InNamespace(other)); err != nil || len(inOther.Items) != 0 {
		t.Errorf("listing a namespace not served: %d tasks, %v; want none", len(inOther.Items), err)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the handler to have every served task", func(context.Context) error {
		want := map[string]string{}
		for _, k := range tasks(served, always) {
			want[k] = "add"
		}
		if diff := cmp.Diff(want, ev.snapshot()); diff != "" {
			return fmt.Errorf("events (-want +got):\n%s", diff)
		}
		return nil
	})

	// Labelled: taken up, with the index and the handler.
	label(t, other, "true")
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the labelled namespace's tasks", func(context.Context) error {
		if diff := cmp.Diff(tasks(other, served, always), cached()); diff != "" {
			return fmt.Errorf("cached tasks (-want +got):\n%s", diff)
		}
		if ev.snapshot()[other+"/a"] != "add" {
			return fmt.Errorf("no create event for %s/a", other)
		}
		return nil
	})

	// Unlabelled: let go, its tasks leaving as deletes.
	label(t, served, "")
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the unlabelled namespace's tasks to go", func(context.Context) error {
		if diff := cmp.Diff(tasks(other, always), cached()); diff != "" {
			return fmt.Errorf("cached tasks (-want +got):\n%s", diff)
		}
		got := ev.snapshot()
		if got[served+"/a"] != "delete" || got[served+"/b"] != "delete" {
			return fmt.Errorf("events for %s: %v", served, got)
		}
		return nil
	})
	if err := sc.Get(ctx, client.ObjectKey{Namespace: served, Name: "a"}, &schedv1.AgentTask{}); !apierrors.IsNotFound(err) {
		t.Errorf("a task of a namespace let go: got %v, want NotFound", err)
	}
	if got := sc.Namespaces(); !slices.Equal(got, sortedOf(other, always)) {
		t.Errorf("served namespaces = %v, want %v", got, sortedOf(other, always))
	}
	for _, p := range rec.of("agenttasks") {
		if !strings.Contains(p, "/namespaces/") {
			t.Errorf("the cache asked for AgentTasks across the cluster: %s", p)
		}
	}
}

func sortedOf(s ...string) []string {
	slices.Sort(s)
	return s
}

// label sets or, with "", removes the served label of namespace ns.
func label(t *testing.T, ns, value string) {
	t.Helper()
	n := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if value == "" {
		delete(n.Labels, servedLabel)
	} else {
		n.Labels[servedLabel] = value
	}
	if err := env.Client.Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}
