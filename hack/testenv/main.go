package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// MainOptions say what Main starts for a package's tests. Set exactly one
// of Sim and Env.
type MainOptions struct {
	// Sim receives a simulated cluster (StartSimWith) started with
	// SimOptions: for tests whose pods must be scheduled, run and finish.
	Sim        **Sim
	SimOptions cluster.Options
	// Env receives a bare API server (Start): for tests that need no pods
	// to run.
	Env **Env

	// BeforeOperator runs once the cluster is up, before the operator
	// starts: installing what the operator looks for when it starts, such
	// as optional CRDs.
	BeforeOperator func(ctx context.Context, cfg *rest.Config, c client.Client) error
	// Controllers are the controllers the operator runs (app.Options
	// Controllers); nil leaves the default.
	Controllers []string
	// Options change the operator's options after Controllers is set, on
	// every start.
	Options func(*app.Options)
	// WrapTransport wraps the operator's transport to the API server, to
	// record its requests.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Operator receives the running operator, for tests that stop it or
	// restart it with other options.
	Operator **Operator
	// AfterOperator runs once the operator has started, before the tests:
	// creating objects in the operator's namespace, which StartOperator
	// creates.
	AfterOperator func(ctx context.Context, cfg *rest.Config, c client.Client) error

	// OperatorLog is a pattern (os.CreateTemp) for a file the operator
	// logs to, kept and named when a test fails; "" leaves the log to
	// StartOperator (KUBECTL_SCHED_TEST_LOG).
	OperatorLog string
}

// Main is a package's TestMain for tests against one cluster and one
// operator with only its generated RBAC (see StartOperator). It starts the
// cluster, runs BeforeOperator, starts the operator with o's controllers
// and options, runs AfterOperator, runs the tests, stops the operator (a
// failure to stop fails the run) and the cluster, and exits with the
// tests' code. The simulated cluster's folder is kept when the run fails.
func Main(m *testing.M, o MainOptions) {
	os.Exit(run(m, o))
}

func run(m *testing.M, o MainOptions) int {
	if (o.Sim == nil) == (o.Env == nil) {
		fmt.Fprintln(os.Stderr, "testenv.Main: set exactly one of Sim and Env")
		return 1
	}
	ctx := context.Background()
	var logFile *os.File
	if o.OperatorLog != "" {
		var err error
		if logFile, err = os.CreateTemp("", o.OperatorLog); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// The first logger set is the one controller-runtime keeps, so
		// StartOperator's does not replace it.
		ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))
	}
	code := 1
	defer func() {
		if logFile == nil {
			return
		}
		_ = logFile.Close()
		if code != 0 {
			fmt.Fprintf(os.Stderr, "operator log kept in %s\n", logFile.Name())
		} else {
			_ = os.Remove(logFile.Name())
		}
	}()

	var (
		cfg         *rest.Config
		c           client.Client
		stopCluster func(failed bool)
	)
	if o.Sim != nil {
		sim, err := StartSimWith(o.SimOptions)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return code
		}
		*o.Sim, cfg, c = sim, sim.Config, sim.Client
		stopCluster = func(failed bool) { _ = sim.Stop(failed) }
	} else {
		env, err := Start()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return code
		}
		*o.Env, cfg, c = env, env.Config, env.Client
		stopCluster = func(bool) { _ = env.Stop() }
	}

	op := &Operator{admin: cfg, options: func(opts *app.Options) {
		if o.Controllers != nil {
			opts.Controllers = o.Controllers
		}
		if o.Options != nil {
			o.Options(opts)
		}
	}}
	if o.WrapTransport != nil {
		op.admin = rest.CopyConfig(cfg)
		op.admin.Wrap(o.WrapTransport)
	}
	if o.Operator != nil {
		*o.Operator = op
	}
	var err error
	if o.BeforeOperator != nil {
		err = o.BeforeOperator(ctx, cfg, c)
	}
	if err == nil {
		err = op.Start(nil)
	}
	if err == nil && o.AfterOperator != nil {
		err = o.AfterOperator(ctx, cfg, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = op.Stop()
		stopCluster(true)
		return code
	}

	code = m.Run()
	if err := op.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		code = 1
	}
	stopCluster(code != 0)
	return code
}

// Operator is the operator Main runs for a package. Tests that need it
// stopped, or running with other options, Stop and Start it; they must not
// run in parallel with others.
type Operator struct {
	// admin is the cluster admin's config; StartOperator impersonates the
	// operator with it.
	admin *rest.Config
	// options are the package's (MainOptions Controllers and Options).
	options func(*app.Options)
	stop    func() error
	opts    app.Options
}

// Start starts the operator with the package's options, then mutate's
// changes (nil: none).
func (op *Operator) Start(mutate func(*app.Options)) error {
	if op.stop != nil {
		return errors.New("the operator is already running")
	}
	stop, opts, err := StartOperator(context.Background(), op.admin, func(o *app.Options) {
		op.options(o)
		if mutate != nil {
			mutate(o)
		}
	})
	if err != nil {
		return err
	}
	op.stop, op.opts = stop, opts
	return nil
}

// Stop stops the operator and waits for it to exit; it does nothing when
// the operator is not running.
func (op *Operator) Stop() error {
	if op.stop == nil {
		return nil
	}
	stop := op.stop
	op.stop = nil
	return stop()
}

// Options are the options the operator last started with.
func (op *Operator) Options() app.Options { return op.opts }

// Reconciles is how many reconciles the controller named controller has
// finished, from the operator's metrics.
func (op *Operator) Reconciles(ctx context.Context, controller string) (int, error) {
	m, err := ScrapeMetrics(ctx, "http://"+op.opts.MetricsAddr+"/metrics")
	if err != nil {
		return 0, err
	}
	return int(m.Sum("controller_runtime_reconcile_total", map[string]string{"controller": controller})), nil
}
