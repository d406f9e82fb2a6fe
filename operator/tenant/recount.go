package tenant

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Why a recount is needed, from kube-controller-manager's resource quota
// controller (pkg/controller/resourcequota, Kubernetes 1.36):
//   - it counts a quota when the quota is created, when its spec.hard
//     changes (any other update, status or metadata, is ignored), when an
//     object it counts is deleted in the namespace, and on its full resync
//     (--resource-quota-sync-period, 5m by default);
//   - it can count a CRD's count/ resource only once its discovery, every
//     30s, has found the CRD.
//
// A tier quota made in the seconds after `kubectl sched install` names the
// CRDs' count/ resources before that discovery: it is counted without them,
// and the API server refuses every create of those kinds in the namespace
// ("status unknown for quota") until the full resync. Nothing is deleted
// in a new namespace, so the one cure in the operator's hands is a change
// of spec.hard: it adds QuotaRecountResource, which no evaluator counts or
// checks, and the next reconcile takes it out again; each change makes
// the quota controller recount at once. Until its discovery has found the
// CRDs the recount still lacks them, so the operator repeats, every
// recountEvery for recountFast, then backing off to recountMax.
const (
	recountEvery = 5 * time.Second
	recountFast  = time.Minute
	recountMax   = 5 * time.Minute
	// notCountedAfter is how long a quota stays uncounted before the
	// namespace gets a Warning event: longer than the quota controller's
	// discovery (30s) and the waits after it.
	notCountedAfter = 2 * time.Minute
)

// recounts remembers, per namespace, since when its tier quota has been
// uncounted and when the operator last asked for a recount. Lost on a
// restart, which only restarts the schedule.
type recounts struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	state map[string]*recountState
}

type recountState struct {
	since, last time.Time
	asked       int
	warned      bool
}

// due says whether a recount of ns may be asked now, and otherwise how
// long to wait.
func (r *recounts) due(ns string) (time.Duration, *recountState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if r.state == nil {
		r.state = map[string]*recountState{}
	}
	s := r.state[ns]
	if s == nil {
		s = &recountState{since: now}
		r.state[ns] = s
	}
	if s.asked == 0 {
		return 0, s
	}
	interval := recountEvery
	if over := now.Sub(s.since); over > recountFast {
		// Doubling from recountEvery for each interval past recountFast.
		interval = recountEvery << min(int(over/recountFast), 6)
	}
	interval = min(interval, recountMax)
	return max(s.last.Add(interval).Sub(now), 0), s
}

func (r *recounts) asked(s *recountState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.last = r.clock.Now()
	s.asked++
}

func (r *recounts) forget(ns string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.state, ns)
}

// recount asks the quota controller to count the namespace's tier quota
// (desired, as built) again while it has seen its spec but left some of
// what it limits uncounted.
func (r *Reconciler) recount(ctx context.Context, ns *corev1.Namespace, desired *corev1.ResourceQuota) (ctrl.Result, error) {
	q := &corev1.ResourceQuota{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: desired.Name}, q); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	uncounted := tiers.Uncounted(q)
	if len(uncounted) == 0 {
		r.recounts.forget(ns.Name)
		return ctrl.Result{}, nil
	}
	if !UpToDate(desired, q) || !tiers.Synced(q) {
		// Our write is not in the cache yet, or the quota controller has
		// not seen the spec: a new or changed spec is counted at once,
		// and the change of its status brings us back.
		return ctrl.Result{}, nil
	}
	wait, s := r.recounts.due(ns.Name)
	if wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	names := make([]string, len(uncounted))
	for i, n := range uncounted {
		names[i] = string(n)
	}
	what := strings.Join(names, ", ")
	nudged := desired.DeepCopy()
	nudged.Spec.Hard = nudged.Spec.Hard.DeepCopy()
	nudged.Spec.Hard[schedv1.QuotaRecountResource] = resource.MustParse("0")
	if err := r.Patch(ctx, nudged, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("ask for a recount of quota %s: %w", desired.Name, err)
	}
	r.recounts.asked(s)
	log.FromContext(ctx).Info("Asked the quota controller to recount", "namespace", ns.Name, "quota", desired.Name, "uncounted", what, "times", s.asked)
	if s.asked == 1 {
		r.Recorder.Eventf(ns, nil, corev1.EventTypeNormal, schedv1.ReasonQuotaRecount, "Recount",
			"quota %s does not count %s yet, so the API server refuses creates of those kinds here; asked the cluster's quota controller to recount (it finds new kinds within 30s of their install)", desired.Name, what)
	}
	if !s.warned && r.recounts.clock.Since(s.since) > notCountedAfter {
		s.warned = true
		r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, schedv1.ReasonQuotaNotCounted, "Recount",
			"quota %s still does not count %s after %s: the API server refuses creates of those kinds here. Check that they are served ('kubectl api-resources'; a tier may name a CRD that is not installed) and that kube-controller-manager runs its resourcequota controller", desired.Name, what, notCountedAfter)
	}
	// The change's own event brings the next reconcile, which takes the
	// marker out again (a second change, a second recount).
	return ctrl.Result{}, nil
}
