package plugintest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/watchtest"
)

// Namespace makes namespace ns, unless it is there already.
func (e *Env) Namespace(t testing.TB, ns string) {
	t.Helper()
	err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// Shop is the app the plugin's tests change, follow and read: namespace
// ns made, then app shop deployed as a user deploys it (`kubectl sched
// deploy shop --template web-app --set apiImage=api:1`): services web
// (nginx:1.27, public) and api (api:1, internal), 2 replicas each. It
// returns the app as the API server has it.
func (e *Env) Shop(t testing.TB, ns string) *schedv1.UserDeployment {
	t.Helper()
	e.Namespace(t, ns)
	e.MustRun(t, "deploy", "shop", "-n", ns, "--template", "web-app", "--set", "apiImage=api:1")
	return e.App(t, ns, "shop")
}

// Hello is the app of one image beside Shop: app hello deployed in ns as
// `kubectl sched deploy hello --image nginx:1.27 --internal` and flags
// (service web, 1 replica).
func (e *Env) Hello(t testing.TB, ns string, flags ...string) *schedv1.UserDeployment {
	t.Helper()
	e.Namespace(t, ns)
	e.MustRun(t, append([]string{"deploy", "hello", "-n", ns, "--image", "nginx:1.27", "--internal"}, flags...)...)
	return e.App(t, ns, "hello")
}

// App reads app name in ns.
func (e *Env) App(t testing.TB, ns, name string) *schedv1.UserDeployment {
	t.Helper()
	ud := &schedv1.UserDeployment{}
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ud); err != nil {
		t.Fatal(err)
	}
	return ud
}

// SetAppStatus writes status for the app's current generation, as the
// operator would, once the app exists: the command under test may be
// about to create it. It may run in a goroutine of its own: it fails the
// test with Errorf, not Fatal.
func (e *Env) SetAppStatus(t testing.TB, ns, name string, status schedv1.UserDeploymentStatus) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(watchtest.Timeout)
	for {
		ud := &schedv1.UserDeployment{}
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ud)
		if err == nil {
			ud.Status = status
			ud.Status.ObservedGeneration = ud.Generation
			if err = e.Client.Status().Update(ctx, ud); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("set the status of userdeployment %s/%s: %v", ns, name, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Service is service name of app ns/app; the test fails when it has none.
func (e *Env) Service(t testing.TB, ns, app, name string) schedv1.ServiceSpec {
	t.Helper()
	for _, s := range e.App(t, ns, app).Spec.Services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("userdeployment %s/%s has no service %s", ns, app, name)
	return schedv1.ServiceSpec{}
}

// CreateWithStatus creates each object, then writes the status it was
// given, as its controller would: a create drops the status. An object
// given no status is only created.
func (e *Env) CreateWithStatus(t testing.TB, objs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range objs {
		given, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
		status, ok := given["status"].(map[string]any)
		if !ok || len(status) == 0 {
			continue
		}
		created, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		created["status"] = status
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created, obj); err != nil {
			t.Fatal(err)
		}
		if err := e.Client.Status().Update(ctx, obj); err != nil {
			t.Fatalf("status of %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// UpdateStatus writes obj's status as its controller would: it reads obj
// by its key, change edits it, and the status is written, again on a
// conflict.
func UpdateStatus[T client.Object](t testing.TB, e *Env, obj T, change func(T)) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return e.Client.Status().Update(ctx, obj)
	})
	if err != nil {
		t.Fatalf("status of %T %s: %v", obj, obj.GetName(), err)
	}
}

// Resources is a ResourceList of names and quantities: Resources("cpu",
// "1", "pods", "3").
func Resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}
