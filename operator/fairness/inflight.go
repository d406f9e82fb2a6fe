package fairness

import (
	"container/list"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// InFlight lets at most a fixed number of the operator's requests about
// one namespace's objects be in flight at once; the next wait, in order,
// for one to end. A namespace's request is one whose URL names it: its
// objects, or the namespace itself. It is the operator's half of the API
// server's priority and fairness: the server sees all of the operator's
// requests as one flow, so one namespace's work can slow the server for
// every namespace, and only the operator can tell the namespaces apart.
// When the server is quick, requests end before the next come and nothing
// waits; when one namespace's work slows it, that namespace's requests
// queue here, in the operator, and the work they would set off (a rollout
// per change of an app) comes no faster than the server serves it, while
// every other namespace still has its own seats.
//
// Requests that name no namespace (cluster-scoped objects, lists across
// the cluster), watches, and requests about the exempt namespaces (the
// operator's own: its leader Lease must never wait behind a tenant) are
// not limited. Memory is per namespace with requests in flight or waiting,
// so an idle namespace costs nothing.
type InFlight struct {
	max    int
	exempt sets.Set[string]
	infos  *request.RequestInfoFactory
	wait   prometheus.Observer

	mu    sync.Mutex
	flows map[string]*seats
}

// seats are one namespace's requests in flight, and those waiting.
type seats struct {
	used    int
	waiting list.List // of chan struct{}, closed when given a seat
}

// NewInFlight limits each namespace to max requests in flight, but those
// of the exempt namespaces.
func NewInFlight(max int, exempt ...string) *InFlight {
	return &InFlight{
		max:    max,
		exempt: sets.New(exempt...),
		infos:  &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
		wait:   requestWait(),
		flows:  map[string]*seats{},
	}
}

// Wrap returns rt behind the limit: a func for rest.Config.Wrap.
func (l *InFlight) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		ns := l.namespace(req)
		if ns == "" {
			return rt.RoundTrip(req)
		}
		began := time.Now()
		waited, err := l.acquire(req.Context(), ns)
		if err != nil {
			return nil, err
		}
		if waited {
			l.wait.Observe(time.Since(began).Seconds())
		} else {
			l.wait.Observe(0)
		}
		defer l.release(ns)
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// namespace is the namespace whose seats req takes; "" when it takes none.
func (l *InFlight) namespace(req *http.Request) string {
	info, err := l.infos.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest || info.Verb == "watch" || l.exempt.Has(info.Namespace) {
		return ""
	}
	return info.Namespace
}

// acquire takes one of ns's seats, waiting for one while all are taken;
// waited says it did.
func (l *InFlight) acquire(ctx context.Context, ns string) (waited bool, err error) {
	l.mu.Lock()
	s, ok := l.flows[ns]
	if !ok {
		s = &seats{}
		l.flows[ns] = s
	}
	if s.used < l.max && s.waiting.Len() == 0 {
		s.used++
		l.mu.Unlock()
		return false, nil
	}
	given := make(chan struct{})
	elem := s.waiting.PushBack(given)
	l.mu.Unlock()
	select {
	case <-given:
		return true, nil
	case <-ctx.Done():
		l.mu.Lock()
		select {
		case <-given:
			// Given a seat as the context ended: hand it on.
			l.mu.Unlock()
			l.release(ns)
		default:
			s.waiting.Remove(elem)
			l.forget(ns, s)
			l.mu.Unlock()
		}
		return true, ctx.Err()
	}
}

// release gives ns's seat to its next waiting request, or frees it.
func (l *InFlight) release(ns string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.flows[ns]
	if front := s.waiting.Front(); front != nil {
		close(s.waiting.Remove(front).(chan struct{}))
		return
	}
	s.used--
	l.forget(ns, s)
}

// forget drops a namespace that has nothing in flight or waiting.
func (l *InFlight) forget(ns string, s *seats) {
	if s.used == 0 && s.waiting.Len() == 0 {
		delete(l.flows, ns)
	}
}

// InUse is how many requests each namespace has in flight, and how many
// wait; for tests.
func (l *InFlight) InUse() map[string][2]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][2]int{}
	for ns, s := range l.flows {
		out[ns] = [2]int{s.used, s.waiting.Len()}
	}
	return out
}

// requestWait is the histogram of waits for a seat, one for the process
// (tests start several operators in one).
var requestWait = sync.OnceValue(func() prometheus.Observer {
	return shared(prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubectl_sched_namespace_request_wait_seconds",
		Help:    "How long the operator's requests about one namespace's objects waited for one of the namespace's seats (--max-requests-in-flight-per-namespace).",
		Buckets: slices.Concat([]float64{0}, prometheus.ExponentialBuckets(0.001, 4, 8)),
	}))
})
