// Package controlleropts holds the options every controller of the operator
// runs with.
package controlleropts

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubectl-sched/kubectl-sched/operator/fairness"
)

// MaxRetryDelay caps the workqueue's exponential backoff. controller-runtime's
// default cap is 1000 s: an object whose reconciles failed all through an API
// server outage could then wait a quarter of an hour after the server is
// back, when no new event brings it back sooner.
const MaxRetryDelay = 30 * time.Second

// New returns the options with workers reconciles at once and the capped
// backoff. With fair, the work queue hands out reconciles round robin
// across namespaces (fairness.Queue), so one namespace's backlog does not
// hold up another's; without, it is controller-runtime's priority queue,
// first come first served.
func New(workers int, fair bool) controller.Options {
	o := controller.Options{
		MaxConcurrentReconciles: workers,
		// controller-runtime's default limiter but for the cap: per-item
		// exponential backoff, and 10 retries a second overall.
		RateLimiter: workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxRetryDelay),
			&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
		),
	}
	if fair {
		o.NewQueue = func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return fairness.New(fairness.Options[reconcile.Request]{
				Flow:        fairness.Namespace,
				RateLimiter: limiter,
				Metrics:     fairness.ControllerMetrics(),
				Name:        name,
			})
		}
	}
	return o
}
