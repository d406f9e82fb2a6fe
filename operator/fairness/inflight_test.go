package fairness

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// held is a RoundTripper whose requests stay in flight until released;
// the limiter's logic needs no server.
type held struct {
	mu      sync.Mutex
	started []string // request paths, in the order they reached it
	release map[string]chan struct{}
}

func newHeld() *held { return &held{release: map[string]chan struct{}{}} }

func (h *held) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.started = append(h.started, req.URL.Path)
	ch, ok := h.release[req.URL.Path]
	if !ok {
		ch = make(chan struct{})
		h.release[req.URL.Path] = ch
	}
	h.mu.Unlock()
	select {
	case <-ch:
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// finish lets the request to path end.
func (h *held) finish(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.release[path]
	if !ok {
		ch = make(chan struct{})
		h.release[path] = ch
	}
	close(ch)
}

func (h *held) reached() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.started...)
}

// send starts a request to path through rt; the channel gets its error.
func send(ctx context.Context, rt http.RoundTripper, method, path string) <-chan error {
	done := make(chan error, 1)
	req, err := http.NewRequestWithContext(ctx, method, "https://api.example"+path, nil)
	if err != nil {
		done <- err
		return done
	}
	go func() {
		_, err := rt.RoundTrip(req)
		done <- err
	}()
	return done
}

func TestInFlightPerNamespace(t *testing.T) {
	next := newHeld()
	l := NewInFlight(2, "kubectl-sched-system")
	rt := l.Wrap(next)
	ctx := t.Context()
	const (
		a1 = "/apis/sched.kubectl-sched.dev/v1alpha1/namespaces/a/userdeployments/app-1/status"
		a2 = "/apis/apps/v1/namespaces/a/deployments/app-2"
		a3 = "/api/v1/namespaces/a/events"
		a4 = "/api/v1/namespaces/a" // the namespace itself is its own
		b1 = "/apis/batch/v1/namespaces/b/jobs"
	)
	var errs []<-chan error
	for _, p := range []string{a1, a2, a3, a4} {
		errs = append(errs, send(ctx, rt, http.MethodPatch, p))
		time.Sleep(10 * time.Millisecond) // in this order
	}
	eventually(t, "a's two seats taken and two requests waiting", func() bool {
		return cmp.Equal(l.InUse(), map[string][2]int{"a": {2, 2}})
	})
	// Another namespace has seats of its own.
	errB := send(ctx, rt, http.MethodPost, b1)
	eventually(t, "b's request to reach the server", func() bool { return len(next.reached()) == 3 })
	next.finish(b1)
	if err := <-errB; err != nil {
		t.Fatal(err)
	}
	// a's waiting requests go in order, as seats free.
	next.finish(a2)
	eventually(t, "a3 to take a2's seat", func() bool { return len(next.reached()) == 4 })
	next.finish(a1)
	eventually(t, "a4 to take a1's seat", func() bool { return len(next.reached()) == 5 })
	next.finish(a3)
	next.finish(a4)
	for _, e := range errs {
		if err := <-e; err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{a1, a2, b1, a3, a4}, next.reached()); diff != "" {
		t.Errorf("order the requests reached the server (-want +got):\n%s", diff)
	}
	if got := l.InUse(); len(got) != 0 {
		t.Errorf("namespaces left with seats or waiters: %v; want none", got)
	}
}

func TestInFlightExempt(t *testing.T) {
	next := newHeld()
	l := NewInFlight(1, "kubectl-sched-system")
	rt := l.Wrap(next)
	ctx := t.Context()
	paths := []string{
		"/apis/coordination.k8s.io/v1/namespaces/kubectl-sched-system/leases/leader", // the operator's own
		"/apis/coordination.k8s.io/v1/namespaces/kubectl-sched-system/leases/status",
		"/api/v1/nodes/node-1",                        // cluster-scoped
		"/apis/batch/v1/jobs",                         // a list across the cluster
		"/apis/batch/v1/namespaces/a/jobs?watch=true", // a watch
		"/apis/apps/v1/namespaces/a/deployments?watch=1",
	}
	for _, p := range paths {
		send(ctx, rt, http.MethodGet, p)
	}
	eventually(t, "every exempt request to reach the server at once", func() bool { return len(next.reached()) == len(paths) })
	if got := l.InUse(); len(got) != 0 {
		t.Errorf("seats taken by exempt requests: %v", got)
	}
}

func TestInFlightCancelledWait(t *testing.T) {
	next := newHeld()
	l := NewInFlight(1)
	rt := l.Wrap(next)
	const first, second, third = "/api/v1/namespaces/a/pods/p1", "/api/v1/namespaces/a/pods/p2", "/api/v1/namespaces/a/pods/p3"
	errFirst := send(t.Context(), rt, http.MethodDelete, first)
	eventually(t, "the first request to take the seat", func() bool { return len(next.reached()) == 1 })
	ctx, cancel := context.WithCancel(t.Context())
	errSecond := send(ctx, rt, http.MethodDelete, second)
	errThird := send(t.Context(), rt, http.MethodDelete, third)
	eventually(t, "two requests waiting", func() bool { return cmp.Equal(l.InUse(), map[string][2]int{"a": {1, 2}}) })
	cancel()
	if err := <-errSecond; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiting request whose context ended returned %v, want context.Canceled", err)
	}
	next.finish(first)
	next.finish(third)
	if err := <-errFirst; err != nil {
		t.Fatal(err)
	}
	if err := <-errThird; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{first, third}, next.reached()); diff != "" {
		t.Errorf("requests that reached the server (-want +got):\n%s", diff)
	}
	if got := l.InUse(); len(got) != 0 {
		t.Errorf("left: %v; want nothing", got)
	}
}

// Many requests of several namespaces at once (run with -race): no
// namespace ever has more than its seats in flight, and every request
// ends.
func TestInFlightConcurrent(t *testing.T) {
	const seats = 3
	var mu sync.Mutex
	inFlight, most := map[string]int{}, map[string]int{}
	next := roundTripper(func(req *http.Request) (*http.Response, error) {
		ns := req.Header.Get("X-Namespace")
		mu.Lock()
		inFlight[ns]++
		most[ns] = max(most[ns], inFlight[ns])
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		inFlight[ns]--
		mu.Unlock()
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	l := NewInFlight(seats)
	rt := l.Wrap(next)
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			ns := []string{"a", "b", "c", "d"}[i%4]
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://api.example/api/v1/namespaces/"+ns+"/configmaps", nil)
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("X-Namespace", ns)
			if _, err := rt.RoundTrip(req); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for ns, n := range most {
		if n > seats {
			t.Errorf("namespace %s had %d requests in flight at once, more than its %d seats", ns, n, seats)
		}
	}
	if got := l.InUse(); len(got) != 0 {
		t.Errorf("left: %v; want nothing", got)
	}
}
