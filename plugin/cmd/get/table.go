package get

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	watchtools "k8s.io/client-go/tools/watch"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// fetchTable gets the server-built table of k in ns (all namespaces when
// ns is empty), one object when name is set, and decodes each row's object
// so the printer can add NAMESPACE and label columns.
func fetchTable(ctx context.Context, cfg *rest.Config, k kinds.Kind, ns, name, selector string) (*metav1.Table, error) {
	if !k.Namespaced {
		ns = ""
	}
	t, err := printing.Table(ctx, cfg, k.GVR(), ns, name, selector)
	if err != nil {
		return nil, err
	}
	return t, decodeRows(t)
}

// decodeRows turns each row's raw object into an Unstructured, and makes
// each text cell safe for the terminal (printing.Cell): the CRDs' printer
// columns show messages the tasks' containers wrote, and cli-runtime's
// table printer escapes only ESC and CR. Every table get prints, listed or
// watched, passes here.
func decodeRows(t *metav1.Table) error {
	for i := range t.Rows {
		row := &t.Rows[i]
		for c, cell := range row.Cells {
			if s, ok := cell.(string); ok {
				row.Cells[c] = printing.Cell(s)
			}
		}
		if row.Object.Raw == nil || row.Object.Object != nil {
			continue
		}
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, row.Object.Raw)
		if err != nil {
			return fmt.Errorf("cannot decode a row of the server's table: %w", err)
		}
		row.Object.Object = obj
	}
	return nil
}

// tableEvent is one watch event with its object as a table of one row.
type tableEvent struct {
	Type  watch.EventType
	Table *metav1.Table
}

// watchTables follows k as tables from resourceVersion rv, until ctx ends
// or the server closes the watch, as kubectl get -w does: client-go decodes
// the stream, watchtools.UntilWithoutRetry runs it. It calls fn for each
// event; an ERROR event becomes the returned API error.
func watchTables(ctx context.Context, cfg *rest.Config, k kinds.Kind, ns, name, selector, rv string, timeout time.Duration, fn func(tableEvent) error) error {
	c := rest.CopyConfig(cfg)
	// A watch lasts as long as the user wants; --request-timeout bounds it
	// through timeoutSeconds and ctx instead of cutting the stream as an error.
	c.Timeout = 0
	rc, err := printing.TableClient(c, schedv1.GroupVersion)
	if err != nil {
		return err
	}
	req := rc.Get().SetHeader("Accept", printing.TableAccept).Resource(k.Plural).
		Param("watch", "true").Param("includeObject", "Object").Param("resourceVersion", rv)
	if k.Namespaced && ns != "" {
		req = req.Namespace(ns)
	}
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	if name != "" {
		req = req.Param("fieldSelector", "metadata.name="+name)
	}
	if timeout > 0 {
		req = req.Param("timeoutSeconds", strconv.Itoa(max(1, int(timeout.Seconds()))))
	}
	w, err := req.Watch(ctx)
	if err != nil {
		return err
	}
	_, err = watchtools.UntilWithoutRetry(ctx, w, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Bookmark:
			return false, nil
		case watch.Error:
			return false, apierrors.FromObject(ev.Object)
		}
		t, ok := ev.Object.(*metav1.Table)
		if !ok {
			return false, fmt.Errorf("cannot decode a watch event: got %T, not a table", ev.Object)
		}
		if err := decodeRows(t); err != nil {
			return false, err
		}
		return false, fn(tableEvent{Type: ev.Type, Table: t})
	})
	if errors.Is(err, watchtools.ErrWatchClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

// rowObjects are the objects of a table's rows.
func rowObjects(t *metav1.Table) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(t.Rows))
	for _, r := range t.Rows {
		if u, ok := r.Object.Object.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out
}
