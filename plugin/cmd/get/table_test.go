package get

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

// watchTables decodes a table watch as kubectl get -w does: each event's
// table and its rows' objects, and an ERROR event as the API error.
func TestWatchTablesDecodesEventsAndErrors(t *testing.T) {
	const added = `{"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"5"},` +
		`"columnDefinitions":[{"name":"Name","type":"string"}],` +
		`"rows":[{"cells":["a\u001b[2J"],"object":{"apiVersion":"sched.kubectl-sched.dev/v1alpha1","kind":"AgentTask","metadata":{"name":"a","namespace":"n"}}}]}}`
	const expired = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}`
	for name, tc := range map[string]struct {
		stream  string
		wantErr func(error) bool
	}{
		"closed by the server": {stream: added + "\n", wantErr: func(err error) bool { return err == nil }},
		"error event":          {stream: added + "\n" + expired + "\n", wantErr: apierrors.IsResourceExpired},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if q := r.URL.Query(); q.Get("watch") != "true" || q.Get("resourceVersion") != "4" || q.Get("fieldSelector") != "metadata.name=a" {
					http.Error(w, "unexpected query "+r.URL.RawQuery, http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tc.stream)
			}))
			defer srv.Close()
			k, _ := kinds.Lookup("at")
			var got []tableEvent
			err := watchTables(context.Background(), &rest.Config{Host: srv.URL}, k, "n", "a", "", "4", 0, func(ev tableEvent) error {
				got = append(got, ev)
				return nil
			})
			if !tc.wantErr(err) {
				t.Errorf("unexpected error %v", err)
			}
			if len(got) != 1 || got[0].Type != watch.Added || len(got[0].Table.Rows) != 1 {
				t.Fatalf("events %+v", got)
			}
			row := got[0].Table.Rows[0]
			if u, ok := row.Object.Object.(*unstructured.Unstructured); !ok || u.GetName() != "a" {
				t.Errorf("row object %#v", row.Object.Object)
			}
			if row.Cells[0] != "a^[[2J" {
				t.Errorf("cell %q, want it made safe", row.Cells[0])
			}
		})
	}
}
