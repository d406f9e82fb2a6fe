package userdeployment_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

var (
	sim *testenv.Sim
	// op is the running operator; tests that need other settings restart it.
	op *testenv.Operator
	// customOperator is set while op runs with a test's settings.
	customOperator bool
)

const (
	// testPriorityClass is what placement.priority High maps to; TestPriority creates it.
	testPriorityClass = "test-high"
	// gcTimeout allows for the garbage collector's discovery sync (30s).
	gcTimeout = 2 * testenv.Timeout
)

// One simulated cluster for the package, with stand-in CRDs for External
// Secrets and Traefik, and one operator with only its generated RBAC.
// kube-controller-manager gets more QPS so the benchmark measures the
// operator rather than the controller manager's rate limit.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Sim:        &sim,
		SimOptions: cluster.Options{ExtraControllerManagerArgs: []string{"--kube-api-qps=300", "--kube-api-burst=600"}},
		BeforeOperator: func(_ context.Context, cfg *rest.Config, _ client.Client) error {
			_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: optionalCRDs()})
			return err
		},
		Controllers: []string{"userdeployment"},
		Options: func(o *app.Options) {
			o.Settings.IngressDomain = "apps.test"
			o.Settings.AllowedIngressClasses = []string{"nginx", "internal"}
			o.Settings.PriorityClasses = map[string]string{"High": testPriorityClass}
		},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return writeRecorder{rt} },
		Operator:      &op,
	})
}

// restartOperator restarts the operator with the test settings changed by
// mutate (nil: the defaults). The defaults come back when the test ends.
// Only tests that do not run in parallel may call it.
func restartOperator(t testing.TB, mutate func(*app.Options)) {
	t.Helper()
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := op.Start(mutate); err != nil {
		t.Fatal(err)
	}
	customOperator = mutate != nil
	t.Cleanup(func() {
		if !customOperator {
			return
		}
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if err := op.Start(nil); err != nil {
			t.Fatal(err)
		}
		customOperator = false
	})
}

// writes records every request the operator makes that is not a read.
var writes struct {
	sync.Mutex
	log      []string
	requests map[string]int
}

type writeRecorder struct{ next http.RoundTripper }

func (w writeRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	writes.Lock()
	if r.Method != http.MethodGet {
		writes.log = append(writes.log, r.Method+" "+r.URL.Path)
	}
	if r.URL.Query().Get("watch") != "true" {
		if writes.requests == nil {
			writes.requests = map[string]int{}
		}
		writes.requests[requestKind(r)]++
	}
	writes.Unlock()
	return w.next.RoundTrip(r)
}

// requestKind is "GET userdeployments", "PATCH userdeployments/status":
// the verb and the resource of a request, without namespace and name.
func requestKind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/GROUP/VERSION/...
	if len(parts) > 0 && parts[0] == "apis" {
		parts = parts[min(3, len(parts)):]
	} else {
		parts = parts[min(2, len(parts)):]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	what := r.Method
	if r.Method == http.MethodGet && len(parts) == 1 {
		what = "LIST"
	}
	switch {
	case len(parts) == 0:
		return what + " namespaces"
	case len(parts) >= 3:
		return what + " " + parts[0] + "/" + parts[2]
	}
	return what + " " + parts[0]
}

// requestCounts copies the operator's requests so far by requestKind
// (watches not counted).
func requestCounts() map[string]int {
	writes.Lock()
	defer writes.Unlock()
	return maps.Clone(writes.requests)
}

// writesSince returns the operator's writes after the first n.
func writesSince(n int) []string {
	writes.Lock()
	defer writes.Unlock()
	return append([]string(nil), writes.log[n:]...)
}

func writeCount() int {
	writes.Lock()
	defer writes.Unlock()
	return len(writes.log)
}

// optionalCRDs stand in for External Secrets', Traefik's and cert-manager's CRDs: the
// operator only needs the APIs to be served.
func optionalCRDs() []*apiextensionsv1.CustomResourceDefinition {
	crd := func(group, version, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
		open := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: version, Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type:       "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *open, "status": *open},
					}},
				}},
			},
		}
	}
	return []*apiextensionsv1.CustomResourceDefinition{
		crd("external-secrets.io", "v1", "ExternalSecret", "externalsecrets"),
		crd("traefik.io", "v1alpha1", "IngressRoute", "ingressroutes"),
		crd("cert-manager.io", "v1", "Certificate", "certificates"),
	}
}

// namespace creates a namespace for one test and waits for its default
// ServiceAccount, without which no pod can be created.
func namespace(t testing.TB) string {
	t.Helper()
	name := testenv.Namespace(t, sim.Client)
	// Pods need the namespace's default ServiceAccount.
	testenv.EventuallyWithin(t, testenv.Timeout, "the default ServiceAccount", func(ctx context.Context) error {
		return sim.Client.Get(ctx, types.NamespacedName{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
	})
	return name
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := sim.Client.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// waitUD polls until cond holds for the UserDeployment and returns it.
func waitUD(t *testing.T, ns, name, what string, cond func(*schedv1.UserDeployment) bool) *schedv1.UserDeployment {
	t.Helper()
	ud := &schedv1.UserDeployment{}
	testenv.EventuallyWithin(t, testenv.Timeout, "UserDeployment "+name+" "+what, func(ctx context.Context) error {
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ud); err != nil {
			return err
		}
		if !cond(ud) {
			return fmt.Errorf("not yet; status %+v", ud.Status)
		}
		return nil
	})
	return ud
}

// phase is true when the status describes the current spec and has phase p.
func phase(p schedv1.UserDeploymentPhase) func(*schedv1.UserDeployment) bool {
	return func(ud *schedv1.UserDeployment) bool {
		return ud.Status.ObservedGeneration == ud.Generation && ud.Status.Phase == p
	}
}

// update changes the UserDeployment's spec, retrying on conflicts.
func update(t *testing.T, ns, name string, f func(*schedv1.UserDeploymentSpec)) {
	t.Helper()
	testenv.EventuallyWithin(t, testenv.Timeout, "the update of "+name, func(ctx context.Context) error {
		ud := &schedv1.UserDeployment{}
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ud); err != nil {
			return err
		}
		f(&ud.Spec)
		return sim.Client.Update(ctx, ud)
	})
}

// gone waits until obj no longer exists.
func gone(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.EventuallyWithin(t, testenv.Timeout, fmt.Sprintf("%T %s to be deleted", obj, obj.GetName()), func(ctx context.Context) error {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there")
	})
}

func condition(ud *schedv1.UserDeployment, typ string) metav1.Condition {
	for _, c := range ud.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// reconciles reads the operator's count of finished userdeployment
// reconciles from its metrics endpoint.
func reconciles(t *testing.T) int {
	t.Helper()
	n, err := op.Reconciles(context.Background(), "userdeployment")
	if err != nil {
		t.Fatal(err)
	}
	return n
}
