package fairness

import (
	"context"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/metrics"
)

// Budget paces the operator's requests to the API server as client-go
// does, each kind of object with its own token bucket of qps and burst
// (controller-runtime makes one client per kind, each with its own),
// but hands the tokens out fairly: while requests wait, the namespaces
// they are about take turns, one token each, instead of first come, first
// served. One tenant's burst of requests of a kind (a forEach over a
// thousand items makes a thousand tasks and Jobs, fifty at a time per
// reconcile) then delays another tenant's request of that kind by one
// token per busy namespace, not by the whole burst. A request that finds
// a token and nobody waiting goes at once, as before.
//
// A request's namespace is the one its URL names: its object's, or the
// namespace itself; requests naming none (cluster-scoped objects, lists
// across the cluster) share one flow. Memory is per kind the operator
// uses and per request waiting.
type Budget struct {
	qps   rate.Limit
	burst int
	infos *request.RequestInfoFactory

	mu      sync.Mutex
	buckets map[string]*bucket
}

// NewBudget returns a budget of qps requests a second, and burst at once,
// per kind.
func NewBudget(qps float64, burst int) *Budget {
	return &Budget{
		qps:     rate.Limit(qps),
		burst:   burst,
		infos:   &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
		buckets: map[string]*bucket{},
	}
}

// Wrap paces rt's requests: a func for rest.Config.Wrap. The client's own
// rate limiter must be off (a negative rest.Config.QPS), or requests are
// paced twice. How long each waited is client-go's rate limiter latency
// (rest_client_rate_limiter_duration_seconds), as before.
func (b *Budget) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		info, err := b.infos.NewRequestInfo(req)
		if err != nil || !info.IsResourceRequest {
			// Discovery and health checks: as few as they are cheap.
			return rt.RoundTrip(req)
		}
		began := time.Now()
		if err := b.bucket(info.APIGroup+"/"+info.Resource).wait(req.Context(), info.Namespace); err != nil {
			return nil, err
		}
		metrics.RateLimiterLatency.Observe(req.Context(), req.Method, *req.URL, time.Since(began))
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (b *Budget) bucket(kind string) *bucket {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.buckets[kind]
	if !ok {
		k = &bucket{limiter: rate.NewLimiter(b.qps, b.burst)}
		b.buckets[kind] = k
	}
	return k
}

// Waiting is how many requests wait for a token, by kind ("group/resource")
// and namespace; for tests.
func (b *Budget) Waiting() map[string]map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]map[string]int{}
	for kind, k := range b.buckets {
		k.mu.Lock()
		for ns, f := range k.waiting.flows {
			if out[kind] == nil {
				out[kind] = map[string]int{}
			}
			out[kind][ns] = f.values.Len()
		}
		k.mu.Unlock()
	}
	return out
}

// bucket is one kind's tokens and the requests waiting for them, in turns
// by namespace.
type bucket struct {
	limiter *rate.Limiter

	mu      sync.Mutex
	waiting turns[*waiter]
	// dispatching says a goroutine hands out tokens to the waiting; it
	// runs only while some wait.
	dispatching bool
}

// waiter is a request waiting for a token; given is closed when it has
// one.
type waiter struct {
	given   chan struct{}
	granted bool
}

// wait takes a token for a request about namespace ns, waiting its turn
// when others wait or none is left; an error when ctx ends first.
func (k *bucket) wait(ctx context.Context, ns string) error {
	k.mu.Lock()
	if k.waiting.len() == 0 && k.limiter.Allow() {
		k.mu.Unlock()
		return nil
	}
	w := &waiter{given: make(chan struct{})}
	place := k.waiting.push(ns, w)
	if !k.dispatching {
		k.dispatching = true
		go k.dispatch()
	}
	k.mu.Unlock()
	select {
	case <-w.given:
		return nil
	case <-ctx.Done():
		k.mu.Lock()
		defer k.mu.Unlock()
		if w.granted {
			// The token came as the context ended: the request goes (and
			// fails on its context), so the token is spent, as client-go's
			// would be.
			return nil
		}
		k.waiting.remove(place)
		return ctx.Err()
	}
}

// dispatch hands out each token as it comes to the waiting request whose
// namespace's turn it is, until none waits.
func (k *bucket) dispatch() {
	for {
		r := k.limiter.Reserve()
		time.Sleep(r.Delay())
		k.mu.Lock()
		w, ok := k.waiting.pop()
		if !ok {
			// Everyone waiting gave up: the token goes back.
			r.Cancel()
			k.dispatching = false
			k.mu.Unlock()
			return
		}
		w.granted = true
		close(w.given)
		if k.waiting.len() == 0 {
			k.dispatching = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
	}
}
