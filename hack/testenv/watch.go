package testenv

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// CountDone starts a watch on the objects of list in ns and returns a func
// that waits until n distinct objects have satisfied done. Benchmarks count
// completion this way rather than by polling with Lists, which would load
// the API server they measure, the more so for custom resources. The watch
// is drained from the start: the API server closes one that is not read.
func CountDone(cfg *rest.Config, list client.ObjectList, ns string, n int, timeout time.Duration, done func(client.Object) bool) (wait func() error, err error) {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	w, err := wc.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		cancel()
		return nil, err
	}
	result := make(chan error, 1)
	go func() {
		defer cancel()
		seen := map[string]bool{}
		for len(seen) < n {
			ev, ok := <-w.ResultChan()
			if !ok {
				// The API server ends watches now and then; a new one
				// starts with every object as it is now.
				if w, err = wc.Watch(ctx, list, client.InNamespace(ns)); err != nil {
					result <- fmt.Errorf("watch ended with %d of %d done: %w", len(seen), n, err)
					return
				}
				continue
			}
			if o, isObj := ev.Object.(client.Object); isObj && ev.Type != watch.Error && done(o) {
				seen[o.GetName()] = true
			}
		}
		w.Stop()
		result <- nil
	}()
	return func() error { return <-result }, nil
}

// WatchEach watches the objects of each list in ns and calls f with every
// event, from one goroutine per list, so f must be safe to call
// concurrently. The returned wait returns once ctx is cancelled and the
// watches have ended. A watch the API server ends (it closes a watcher
// that falls behind a burst of events) is started again from the last
// resourceVersion it delivered, so no event in between is lost; one that
// ended with an error (that resourceVersion is too old) is not, as
// resuming would fail the same way: f has seen the error.
func WatchEach(ctx context.Context, cfg *rest.Config, ns string, lists []client.ObjectList, f func(watch.Event)) (wait func(), err error) {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	watchers := make([]watch.Interface, 0, len(lists))
	for _, list := range lists {
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			for _, started := range watchers {
				started.Stop()
			}
			return nil, err
		}
		watchers = append(watchers, w)
	}
	var wg sync.WaitGroup
	for i, w := range watchers {
		wg.Go(func() {
			defer func() { w.Stop() }()
			rv, failed := "", false
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						if rv == "" || failed {
							return // nothing to resume from
						}
						next, err := wc.Watch(ctx, lists[i], client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
						if err != nil {
							return
						}
						w = next
						continue
					}
					if ev.Type == watch.Error {
						failed = true
					} else if o, isObj := ev.Object.(client.Object); isObj {
						rv = o.GetResourceVersion()
					}
					f(ev)
				}
			}
		})
	}
	return wg.Wait, nil
}
