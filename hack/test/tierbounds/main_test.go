package tierbounds_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

var sim *testenv.Sim

// A simulated cluster (pods run, the quota controller counts) with the
// shipped tiers, PriorityClasses and policies, and the whole operator
// (every controller) with its generated RBAC; its log goes to a file kept
// when a test fails.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Sim: &sim,
		// The quota controller counts the CRDs only from its discovery
		// resync (30s after they are installed), then recounts a quota
		// only on its full resync (5m by default).
		SimOptions:  cluster.Options{ExtraControllerManagerArgs: []string{"--resource-quota-sync-period=5s"}},
		OperatorLog: "tierbounds-operator-*.log",
		// As install maps placement priorities (config/manager): the
		// tiers' thresholds are these classes.
		Options: func(o *app.Options) {
			o.Settings.PriorityClasses = map[string]string{
				"Critical": "kubectl-sched-critical", "High": "kubectl-sched-high", "Medium": "kubectl-sched-medium", "Low": "kubectl-sched-low",
			}
		},
		// The tiers ConfigMap lives in the operator's namespace, which
		// starting the operator creates.
		AfterOperator: func(ctx context.Context, _ *rest.Config, c client.Client) error {
			return testenv.ApplyTiers(ctx, c)
		},
	})
}

const pollTimeout = 2 * time.Minute

// poll waits until cond returns nil, failing the test with its last error.
func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := cond(ctx)
		// Not the poll's own deadline cutting cond short (the client's
		// rate limiter says so before it passes).
		if cut := ctx.Err() != nil || err != nil && strings.Contains(err.Error(), "would exceed context deadline"); !cut || last == nil {
			last = err
		}
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// createAs creates obj as c, again while admission refuses it for a
// reason that passes (RBAC and policies take effect a moment after they
// are written).
func createAs(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	poll(t, pollTimeout, fmt.Sprintf("%T %s to be created", obj, obj.GetName()), func(ctx context.Context) error {
		return c.Create(ctx, obj)
	})
}
