package teardown_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

var sim *testenv.Sim

// A simulated cluster (pods run, the quota controller counts) with the
// shipped tiers and PriorityClasses, and the whole operator (every
// controller, Controllers left nil) with its generated RBAC. Its requests
// are recorded; its log goes to a file kept when a test fails.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Sim: &sim,
		// The quota controller counts the CRDs only from its discovery
		// resync (30s after they are installed), then recounts a quota
		// only on its full resync (5m by default); until a tier's quota
		// counts them, admission refuses what it limits.
		SimOptions:    cluster.Options{ExtraControllerManagerArgs: []string{"--resource-quota-sync-period=5s"}},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return recorder{rt} },
		// The tiers ConfigMap lives in the operator's namespace, which
		// starting the operator creates.
		AfterOperator: func(ctx context.Context, _ *rest.Config, c client.Client) error {
			return testenv.ApplyTiers(ctx, c)
		},
	})
}

// request is one request of the operator's, other than a watch.
type request struct {
	at           time.Time
	method, path string
	code         int
}

var requests struct {
	sync.Mutex
	log []request
}

type recorder struct{ next http.RoundTripper }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if req.URL.Query().Get("watch") == "true" {
		return resp, err
	}
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	requests.Lock()
	requests.log = append(requests.log, request{at: time.Now(), method: req.Method, path: req.URL.Path, code: code})
	requests.Unlock()
	return resp, err
}

// requestsIn returns the operator's requests to objects in namespace ns
// since from.
func requestsIn(ns string, from time.Time) []request {
	requests.Lock()
	defer requests.Unlock()
	var in []request
	for _, r := range requests.log {
		if !r.at.Before(from) && strings.Contains(r.path, "/namespaces/"+ns+"/") {
			in = append(in, r)
		}
	}
	return in
}
