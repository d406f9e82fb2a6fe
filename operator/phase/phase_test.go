package phase

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"
)

// TestRun: phases run in order until one fails or stops; an error ends
// the reconcile at once, a Retry once the phases end, and otherwise the
// soonest requeue asked for is the result.
func TestRun(t *testing.T) {
	full, broken := errors.New("quota full"), errors.New("connection refused")
	ok := Result{}
	cases := map[string]struct {
		results []Result
		errs    map[int]error
		ran     []int
		want    ctrl.Result
		wantErr error
	}{
		"all run":               {results: []Result{ok, ok, ok}, ran: []int{0, 1, 2}},
		"the soonest requeue":   {results: []Result{Requeue(3 * time.Second), Requeue(0), Requeue(time.Second)}, ran: []int{0, 1, 2}, want: ctrl.Result{RequeueAfter: time.Second}},
		"a stop":                {results: []Result{Requeue(time.Second), StopFor(2 * time.Second), Requeue(time.Millisecond)}, ran: []int{0, 1}, want: ctrl.Result{RequeueAfter: time.Second}},
		"a stop with no time":   {results: []Result{StopFor(-time.Second), ok}, ran: []int{0}},
		"an error":              {results: []Result{Requeue(time.Second), ok, ok}, errs: map[int]error{1: broken}, ran: []int{0, 1}, wantErr: broken},
		"a retry goes on":       {results: []Result{{Retry: full}, Requeue(time.Second), ok}, ran: []int{0, 1, 2}, wantErr: full},
		"a retry, then a stop":  {results: []Result{{Retry: full}, StopFor(time.Second), ok}, ran: []int{0, 1}, wantErr: full},
		"an error over a retry": {results: []Result{{Retry: full}, ok}, errs: map[int]error{1: broken}, ran: []int{0, 1}, wantErr: broken},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ran []int
			var phases []Func[*[]int]
			for i, r := range tc.results {
				phases = append(phases, func(_ context.Context, s *[]int) (Result, error) {
					*s = append(*s, i)
					return r, tc.errs[i]
				})
			}
			got, err := Run(context.Background(), &ran, phases...)
			if diff := cmp.Diff(tc.ran, ran); diff != "" {
				t.Errorf("phases run (-want +got):\n%s", diff)
			}
			if got != tc.want || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("Run = %+v, %v; want %+v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
