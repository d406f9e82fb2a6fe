package agenttask_test

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

func gone(t *testing.T, obj client.Object, what string) {
	t.Helper()
	testenv.Poll(t, testenv.Timeout, what, func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// expiredEvent waits for the Expired event of the task name.
func expiredEvent(t *testing.T, ns, name string) corev1.Event {
	t.Helper()
	var found corev1.Event
	testenv.Poll(t, testenv.Timeout, "the Expired event of "+name, func(ctx context.Context) (bool, error) {
		var list corev1.EventList
		if err := sim.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == schedv1.ReasonExpired {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// TestTierDefaultTTL: in a namespace of a tier, a finished task without
// ttlAfterFinished is deleted after the tier's default, and says so in
// status.expiry first and in an event when it goes.
func TestTierDefaultTTL(t *testing.T) {
	t.Parallel()
	ns := testenv.TierNamespace(t, sim.Client, "quick", "2s", "1h")
	create(t, task("brief", ns, 0, "answer=42").Obj())
	got := waitTask(t, ns, "brief", "finished with its expiry", func(at *schedv1.AgentTask) bool {
		return finished(at) && at.Status.Expiry != nil && at.Status.Expiry.DeleteTime != nil
	})
	e := got.Status.Expiry
	if e.Source != schedv1.ExpiryFromTierDefault || e.Tier != "quick" || e.TTLAfterFinished.Duration != 2*time.Second ||
		!e.DeleteTime.Time.Equal(got.Status.CompletionTime.Add(2*time.Second)) {
		t.Errorf("expiry %+v (completed %s), want the tier's default 2s after completion", e, got.Status.CompletionTime)
	}
	gone(t, got, "the task deleted after the tier's default")
	if ev := expiredEvent(t, ns, "brief"); !strings.Contains(ev.Message, "deleted 2s after it finished (tier quick's default ttlAfterFinished)") {
		t.Errorf("event %q", ev.Message)
	}
}

// TestTierMaximumKeepsTheRecordOfCleanupJob: a task whose ttlAfterFinished
// deletes only its Job keeps its record, up to the tier's maximum.
func TestTierMaximumKeepsTheRecordOfCleanupJob(t *testing.T) {
	t.Parallel()
	ns := testenv.TierNamespace(t, sim.Client, "quick", "1h", "8s")
	create(t, task("record", ns, 0, "answer=42").TTL(time.Second, schedv1.CleanupJob).Obj())
	got := waitTask(t, ns, "record", "finished", func(at *schedv1.AgentTask) bool {
		return finished(at) && at.Status.Expiry != nil && at.Status.Expiry.DeleteTime != nil
	})
	if e := got.Status.Expiry; e.Source != schedv1.ExpiryFromTierMaximum || e.TTLAfterFinished.Duration != 8*time.Second {
		t.Errorf("expiry %+v, want the tier's maximum", e)
	}
	gone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "record"}}, "the Job deleted by the task's own TTL")
	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(got), got); err != nil {
		t.Fatalf("the task went with its Job: %v", err)
	}
	gone(t, got, "the task deleted at the tier's maximum")
}

// TestTierChangeMovesTheExpiry: a finished task follows its tier's TTLs
// when they change (here, an admin shortens the default).
func TestTierChangeMovesTheExpiry(t *testing.T) {
	t.Parallel()
	ns := testenv.TierNamespace(t, sim.Client, "slow", "1h", "")
	create(t, task("waits", ns, 0, "").Obj())
	got := waitTask(t, ns, "waits", "finished with an hour to go", func(at *schedv1.AgentTask) bool {
		return finished(at) && at.Status.Expiry != nil && at.Status.Expiry.DeleteTime != nil
	})
	if e := got.Status.Expiry; e.TTLAfterFinished.Duration != time.Hour {
		t.Fatalf("expiry %+v, want 1h", e)
	}
	q := &corev1.ResourceQuota{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: schedv1.TierObjectName}, q); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(q.DeepCopy())
	q.Annotations[schedv1.AnnotationTierTTLDefault] = "1s"
	if err := sim.Client.Patch(t.Context(), q, patch); err != nil {
		t.Fatal(err)
	}
	gone(t, got, "the task deleted once the tier's default is 1s")
}

// TestInstallDefaultTTL: outside a tier, a finished task without
// ttlAfterFinished gets the install's default (--default-ttl, a week
// unless set), and says so in status.expiry.
func TestInstallDefaultTTL(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("kept", ns, 0, "").Obj())
	got := waitTask(t, ns, "kept", "finished with its expiry", func(at *schedv1.AgentTask) bool {
		return finished(at) && at.Status.Expiry != nil && at.Status.Expiry.DeleteTime != nil
	})
	week := 7 * 24 * time.Hour
	if e := got.Status.Expiry; e.Source != schedv1.ExpiryFromInstallDefault || e.Tier != "" || e.TTLAfterFinished.Duration != week ||
		!e.DeleteTime.Time.Equal(got.Status.CompletionTime.Add(week)) {
		t.Errorf("expiry %+v (completed %s), want the install's default, a week after completion", e, got.Status.CompletionTime)
	}
}
