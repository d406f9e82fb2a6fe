package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// paths records the paths of the operator's requests.
type paths struct {
	mu  sync.Mutex
	all []string
}

func (p *paths) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		p.mu.Lock()
		p.all = append(p.all, req.Method+" "+req.URL.Path)
		p.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (p *paths) snapshot() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.all...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestNamespaceSelector runs the operator, with its generated RBAC, limited
// to the namespaces labelled scope.example.org/served=true: a task in a
// namespace without the label is never reconciled, and the operator never
// asks the API server for anything of that namespace nor for a namespaced
// kind across the cluster (so its caches cannot hold it). Labelling the
// namespace while the operator runs brings the task in; unlabelling
// another lets its new tasks be.
func TestNamespaceSelector(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	c := env.Client

	rec := &paths{}
	admin := rest.CopyConfig(env.Config)
	admin.Wrap(rec.wrap)
	stop, _, err := testenv.StartOperator(ctx, admin, func(o *app.Options) {
		o.Settings.NamespaceSelector = "scope.example.org/served=true"
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("manager stopped with an error: %v", err)
		}
	})

	served, other := testenv.Namespace(t, c), testenv.Namespace(t, c)
	setLabel(t, c, served, "true")
	// The task in the other namespace first, so that the served one's
	// being reconciled shows the operator has had every chance at it.
	create := func(ns, name string) {
		t.Helper()
		if err := c.Create(ctx, MakeAgentTask(name, ns).Image("busybox").Obj()); err != nil {
			t.Fatal(err)
		}
	}
	create(other, "early")
	create(served, "early")
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the served namespace's task to have a Job", reconciled(ctx, c, served, "early"))
	if err := reconciled(ctx, c, other, "early")(ctx); err == nil {
		t.Errorf("the task in namespace %s, which the selector does not pick, was reconciled", other)
	}
	for _, p := range rec.snapshot() {
		if strings.Contains(p, "/namespaces/"+other+"/") {
			t.Errorf("the operator asked for %s, in a namespace the selector does not pick", p)
		}
		if clusterWide(p) {
			t.Errorf("the operator asked for %s, a namespaced kind across the cluster", p)
		}
	}

	// Labelled while the operator runs: its task is taken up.
	setLabel(t, c, other, "true")
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the task of the labelled namespace to have a Job", reconciled(ctx, c, other, "early"))

	// Unlabelled: the operator lets go as soon as it sees the label go.
	// Each probe is a task there and, after it, one in a namespace still
	// served: once the second is reconciled and the first is not, the
	// operator no longer serves the namespace.
	setLabel(t, c, served, "")
	for i := 0; ; i++ {
		name := fmt.Sprintf("probe-%d", i)
		create(served, name)
		create(other, name)
		testenv.EventuallyWithin(t, testenv.ShortTimeout, "a task of the served namespace to be reconciled", reconciled(ctx, c, other, name))
		if reconciled(ctx, c, served, name)(ctx) != nil {
			break
		}
		if i == 20 {
			t.Fatalf("tasks created in %s after its label was removed are still reconciled", served)
		}
	}
}

// reconciled reports whether the operator has made task ns/name's Job and
// written its status.
func reconciled(ctx context.Context, c client.Client, ns, name string) func(context.Context) error {
	return func(context.Context) error {
		task := &schedv1.AgentTask{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, task); err != nil {
			return err
		}
		if task.Status.Phase == "" {
			return fmt.Errorf("task %s/%s has no status", ns, name)
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Job(name)}, &batchv1.Job{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("task %s/%s has no Job", ns, name)
		}
		return err
	}
}

// clusterWide says whether a request path reads a namespaced kind the
// operator caches per namespace across the whole cluster. (Ingresses are
// read across the cluster on purpose: an app's host may not be one that
// another namespace serves.)
func clusterWide(p string) bool {
	for _, r := range []string{"agenttasks", "workflows", "cronworkflows", "userdeployments", "jobs", "pods", "events", "configmaps",
		"resourcequotas", "limitranges", "services", "deployments", "statefulsets", "horizontalpodautoscalers", "networkpolicies", "controllerrevisions"} {
		if strings.HasSuffix(p, "/"+r) && !strings.Contains(p, "/namespaces/") {
			return true
		}
	}
	return false
}

func setLabel(t *testing.T, c client.Client, ns, value string) {
	t.Helper()
	n := &corev1.Namespace{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if value == "" {
		delete(n.Labels, "scope.example.org/served")
	} else {
		n.Labels["scope.example.org/served"] = value
	}
	if err := c.Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}
