package fairness

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// reached records the requests that got through a Budget, in order; the
// budget's logic needs no server.
type reached struct {
	mu    sync.Mutex
	paths []string
}

func (r *reached) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.Path)
	r.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

func (r *reached) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.paths)
}

// goRequest sends a request to path through rt in the background; the
// channel gets its error.
func goRequest(ctx context.Context, rt http.RoundTripper, method, path string) <-chan error {
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

func waitAll(t *testing.T, errs ...<-chan error) {
	t.Helper()
	for _, e := range errs {
		if err := <-e; err != nil {
			t.Fatal(err)
		}
	}
}

func TestBudgetBurstGoesAtOnce(t *testing.T) {
	next := &reached{}
	b := NewBudget(0.001, 5) // no token comes back during the test
	rt := b.Wrap(next)
	var errs []<-chan error
	for range 5 {
		errs = append(errs, goRequest(t.Context(), rt, http.MethodPost, "/api/v1/namespaces/a/configmaps"))
	}
	waitAll(t, errs...)
	// The sixth waits; another kind has its own burst.
	ctx, cancel := context.WithCancel(t.Context())
	sixth := goRequest(ctx, rt, http.MethodPost, "/api/v1/namespaces/a/configmaps")
	eventually(t, "the sixth to wait", func() bool {
		return cmp.Equal(b.Waiting(), map[string]map[string]int{"/configmaps": {"a": 1}})
	})
	waitAll(t, goRequest(t.Context(), rt, http.MethodPost, "/apis/batch/v1/namespaces/a/jobs"))
	// Discovery is not paced.
	waitAll(t, goRequest(t.Context(), rt, http.MethodGet, "/apis"))
	cancel()
	if err := <-sixth; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiting request whose context ended returned %v, want context.Canceled", err)
	}
	if got := b.Waiting(); len(got) != 0 {
		t.Errorf("still waiting: %v", got)
	}
	if got := len(next.list()); got != 7 {
		t.Errorf("%d requests reached the server, want 7 (5, the Job, discovery)", got)
	}
}

// While namespace a has ten requests waiting, one of namespace b goes
// after at most one more of a's. A token every 400 ms: a request given
// its token before b's arrived must reach the server before b's is
// counted waiting, however loaded the machine.
func TestBudgetTurns(t *testing.T) {
	next := &reached{}
	b := NewBudget(2.5, 1)
	rt := b.Wrap(next)
	const a, bPath = "/apis/batch/v1/namespaces/a/jobs", "/apis/batch/v1/namespaces/b/jobs"
	waitAll(t, goRequest(t.Context(), rt, http.MethodPost, a)) // spends the burst
	var errs []<-chan error
	for range 10 {
		errs = append(errs, goRequest(t.Context(), rt, http.MethodPost, a))
	}
	eventually(t, "a's ten to wait", func() bool { return b.Waiting()["batch/jobs"]["a"] >= 9 })
	errs = append(errs, goRequest(t.Context(), rt, http.MethodPost, bPath))
	var before int
	eventually(t, "b's to wait", func() bool {
		before = len(next.list())
		return b.Waiting()["batch/jobs"]["b"] == 1
	})
	waitAll(t, errs...)
	got := next.list()
	at := slices.Index(got, bPath)
	if n := at - before; n > 1 {
		t.Errorf("b's request went after %d more of a's; want at most 1 (order %v)", n, got)
	}
	if got := b.Waiting(); len(got) != 0 {
		t.Errorf("still waiting: %v", got)
	}
}

// Many requests of several namespaces and kinds at once (run with -race):
// each goes through once, and nothing is left waiting.
func TestBudgetConcurrent(t *testing.T) {
	next := &reached{}
	b := NewBudget(2000, 10)
	rt := b.Wrap(next)
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			ns := []string{"a", "b", "c"}[i%3]
			kind := []string{"/api/v1/namespaces/" + ns + "/pods", "/apis/batch/v1/namespaces/" + ns + "/jobs"}[i%2]
			ctx := t.Context()
			if i%7 == 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Millisecond)
				defer cancel()
			}
			if err := <-goRequest(ctx, rt, http.MethodPost, kind); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := b.Waiting(); len(got) != 0 {
		t.Errorf("still waiting: %v", got)
	}
	if n := len(next.list()); n < 300-300/7-1 || n > 300 {
		t.Errorf("%d requests went through; want every one not given up", n)
	}
}
