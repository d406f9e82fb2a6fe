package status

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestPaced: a paced change waits for the rest of the second after the
// object's last write; with no write known, for a second from when the
// Writer first saw a young object, or not at all for an old one. A change
// written Now never waits for the pace.
func TestPaced(t *testing.T) {
	cases := map[string]struct {
		written bool
		created time.Time
		now     time.Time
		pace    Pace
		want    time.Duration
	}{
		"right after a write":      {written: true, created: t0.Add(-time.Hour), now: t0.Add(300 * time.Millisecond), pace: Paced, want: 700 * time.Millisecond},
		"a second after a write":   {written: true, created: t0.Add(-time.Hour), now: t0.Add(time.Second), pace: Paced, want: 0},
		"right after a write, now": {written: true, created: t0.Add(-time.Hour), now: t0.Add(300 * time.Millisecond), pace: Now, want: 0},
		// Its creation timestamp has whole seconds: a second from when
		// it is first seen, not from the start of the second it was
		// created in.
		"never written, first seen just after created":  {created: t0, now: t0.Add(200 * time.Millisecond), pace: Paced, want: time.Second},
		"never written, first seen in the second after": {created: t0, now: t0.Add(1500 * time.Millisecond), pace: Paced, want: 500 * time.Millisecond},
		"never written, created long ago":               {created: t0.Add(-time.Hour), now: t0, pace: Paced, want: -time.Hour + 2*time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := clocktesting.NewFakePassiveClock(t0)
			w := &Writer{Clock: clock}
			task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "t", UID: "u", CreationTimestamp: metav1.NewTime(tc.created)}}
			if tc.written {
				w.paced.set(KeyOf(task), t0)
			}
			clock.SetTime(tc.now)
			got := w.Due(task, tc.pace)
			if tc.pace == Paced {
				// What is left of the pace, below zero too.
				got = w.paceWait(KeyOf(task), tc.created)
			}
			if got != tc.want {
				t.Errorf("wait = %v, want %v", got, tc.want)
			}
		})
	}
	// First sight is where a young object's pacing starts, however often
	// it is asked.
	clock := clocktesting.NewFakePassiveClock(t0.Add(200 * time.Millisecond))
	w := &Writer{Clock: clock}
	task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "t", UID: "u", CreationTimestamp: metav1.NewTime(t0)}}
	w.Due(task, Paced)
	clock.SetTime(t0.Add(700 * time.Millisecond))
	if got := w.Due(task, Paced); got != 500*time.Millisecond {
		t.Errorf("Due half a second after first sight = %v, want 500ms", got)
	}
}

// TestWrite: an unchanged status sends nothing; a changed one is written
// with the metadata and status alone, its answer in the object; a write
// from a cache that has not seen that write waits for the cache, and one
// from a cache that has goes out. The object's spec is neither sent nor
// replaced. (The optimistic lock against a real API server is tested by
// each controller's conflict tests.)
func TestWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := schedv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", UID: "u"}, Spec: schedv1.AgentTaskSpec{Image: "busybox"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
	ctx := context.Background()
	read := func() *schedv1.AgentTask {
		task := &schedv1.AgentTask{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(stored), task); err != nil {
			t.Fatal(err)
		}
		return task
	}
	w := &Writer{Client: c, Clock: clocktesting.NewFakePassiveClock(t0)}

	cached := read()
	task := cached.DeepCopy()
	task.Spec.Image = "" // as a trimmed cache might hold it
	if out, err := w.Write(ctx, task, cached.Status, Now); out != (Outcome{}) || err != nil {
		t.Fatalf("unchanged: %+v, %v", out, err)
	}
	task.Status.Phase = schedv1.TaskRunning
	SetCondition(&task.Status.Conditions, 3, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Running", Message: "running"})
	out, err := w.Write(ctx, task, &cached.Status, Now)
	if !out.Wrote || err != nil {
		t.Fatalf("changed: %+v, %v", out, err)
	}
	got := read()
	if diff := cmp.Diff(task.Status, got.Status); diff != "" || got.ResourceVersion != task.ResourceVersion || task.Spec.Image != "" || got.Spec.Image != "busybox" {
		t.Errorf("written (-object +stored):\n%s\nversions %s, %s; spec images %q, %q", diff, task.ResourceVersion, got.ResourceVersion, task.Spec.Image, got.Spec.Image)
	}

	// The cache still holds the version read before the write.
	stale := cached.DeepCopy()
	stale.Status.Phase = schedv1.TaskSucceeded
	if out, err := w.Write(ctx, stale, cached.Status, Now); out != (Outcome{Wait: CacheRecheck}) || err != nil {
		t.Errorf("from a cache behind the write: %+v, %v; want a wait of %v", out, err, CacheRecheck)
	}
	caughtUp := read()
	caughtUp.Status.Phase = schedv1.TaskSucceeded
	if out, err := w.Write(ctx, caughtUp, got.Status, Now); !out.Wrote || err != nil {
		t.Errorf("from a cache that holds the write: %+v, %v", out, err)
	}
	if read().Status.Phase != schedv1.TaskSucceeded {
		t.Errorf("phase %s stored, want Succeeded", read().Status.Phase)
	}
	if _, err := w.Write(ctx, caughtUp, schedv1.WorkflowStatus{}, Now); err == nil {
		t.Error("a status of another kind was taken")
	}
	w.Forget(caughtUp)
	if w.Len() != 0 {
		t.Errorf("Forget left %d", w.Len())
	}
}
