package waitfor

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// fakeLW serves an empty list, or fails it, and hands out one watch the
// test feeds.
type fakeLW struct {
	listErr error
	w       *watch.FakeWatcher
}

func (f *fakeLW) lw() cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			if f.listErr != nil {
				return nil, f.listErr
			}
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			switch {
			case f.listErr != nil:
				return nil, f.listErr
			case o.SendInitialEvents != nil:
				// As a server without watch-list: the reflector lists.
				return nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
			}
			return f.w, nil
		},
	}
}

// A refused first list ends the wait at once with its error; an informer
// alone would retry it until the timeout.
func TestConditionEndsOnAFailedFirstList(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	f := &fakeLW{listErr: refused}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err := Condition(ctx, f.lw(), &corev1.Pod{}, nil, func(watch.Event) (bool, error) { return true, nil })
	if !apierrors.IsForbidden(err) {
		t.Errorf("got %v, want the list's Forbidden", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
}

func TestConditionFollowsEventsUntilDone(t *testing.T) {
	f := &fakeLW{w: watch.NewFake()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := func(phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "2"}, Status: corev1.PodStatus{Phase: phase}}
	}
	go func() {
		f.w.Add(pod(corev1.PodPending))
		f.w.Modify(pod(corev1.PodRunning))
	}()
	var seen []corev1.PodPhase
	err := Condition(ctx, f.lw(), &corev1.Pod{}, nil, func(e watch.Event) (bool, error) {
		p := e.Object.(*corev1.Pod)
		seen = append(seen, p.Status.Phase)
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil || len(seen) != 2 {
		t.Errorf("got %v after %v", err, seen)
	}
}

func TestConditionReturnsTheContextsError(t *testing.T) {
	f := &fakeLW{w: watch.NewFake()}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := Condition(ctx, f.lw(), &corev1.Pod{}, nil, func(watch.Event) (bool, error) { return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want %v", err, context.DeadlineExceeded)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// With a precondition, the wait may end while the cache syncs.
	err = Condition(ctx, (&fakeLW{listErr: nil, w: watch.NewFake()}).lw(), &corev1.Pod{}, func(cache.Store) (bool, error) { return false, nil },
		func(watch.Event) (bool, error) { return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with a precondition: got %v, want %v", err, context.DeadlineExceeded)
	}
}
