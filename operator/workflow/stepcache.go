package workflow

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Cached steps. A step with cache.key records the resolved key on its
// task: LabelCacheKey, a hash the operator's AgentTask cache indexes, and
// AnnotationCacheKey, the key whole. When such a step would start, the
// step tasks of the namespace with the same hash are looked up in that
// cache (no request to the API server); one that Succeeded with the same
// key, within cache.maxAge, gives its outputs and the step runs nothing.
// The lookup and the hit are decided in decide, a pure function, so a
// restart between the lookup and the status write looks up again and
// either finds the same task or creates the step's own: never both, as a
// step's task has a name of its own that the next reconcile finds.

// cacheLookup returns the AgentTasks of the workflow's namespace that
// carry LabelCacheKey hash: read only.
type cacheLookup func(hash string) []*schedv1.AgentTask

// cacheKeyIndex indexes the cached AgentTasks by their LabelCacheKey.
const cacheKeyIndex = "workflow.tasks.byCacheKey"

// cacheKeyOf is a task's cacheKeyIndex value.
func cacheKeyOf(o client.Object) []string {
	if h, ok := o.GetLabels()[schedv1.LabelCacheKey]; ok && h != "" {
		return []string{h}
	}
	return nil
}

// cacheLookupIn is a cacheLookup over the informer cache of namespace ns.
// An error reading the cache (an index missing) is a miss: the step runs.
func (r *Reconciler) cacheLookupIn(ctx context.Context, ns string) cacheLookup {
	return func(hash string) []*schedv1.AgentTask {
		var list schedv1.AgentTaskList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{cacheKeyIndex: hash}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		out := make([]*schedv1.AgentTask, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out
	}
}

// stepCacheKey resolves step i's cache key, "" when the step has none.
func stepCacheKey(wf *schedv1.Workflow, i int, st *schedv1.WorkflowStatus) (string, error) {
	step := specStep(wf, i)
	if step.Cache == nil {
		return "", nil
	}
	key, err := substitution.ResolveCacheKey(i, step.Cache.Key, stepValues(wf, i, st))
	if tl, ok := err.(*substitution.CacheKeyTooLongError); ok && i >= len(wf.Spec.Steps) {
		tl.StepIndex, tl.Finally = i-len(wf.Spec.Steps), true
	}
	return key, err
}

// cacheHit is the task whose outputs a step with key may take: one of
// found that carries key whole (not only its hash), Succeeded, is not
// being deleted and finished within maxAge (nil: any age) of now; the
// latest such, by completion time and then name, so every reconcile
// picks the same. nil when none does.
func cacheHit(found []*schedv1.AgentTask, key string, maxAge *metav1.Duration, now time.Time) *schedv1.AgentTask {
	var best *schedv1.AgentTask
	hash := schedv1.CacheKeyHash(key)
	for _, t := range found {
		done := t.Status.CompletionTime
		switch {
		case t.Labels[schedv1.LabelCacheKey] != hash, t.Annotations[schedv1.AnnotationCacheKey] != key:
			continue
		case t.Status.Phase != schedv1.TaskSucceeded, done == nil, !t.DeletionTimestamp.IsZero():
			continue
		case maxAge != nil && now.Sub(done.Time) > maxAge.Duration:
			continue
		}
		if best == nil || done.After(best.Status.CompletionTime.Time) ||
			done.Equal(best.Status.CompletionTime) && t.Name > best.Name {
			best = t
		}
	}
	return best
}

// fromCache gives step i (counted as stepStatus counts) the outputs of a
// task found under its cache key, when it has one, spec.noCache is not
// set and it is not the step a retry asked to run again
// (spec.retryOf.fromStep, which would otherwise take its own earlier
// result): it then Succeeded with reason CacheHit and hit is true. key
// is the resolved key ("" when the step has no cache), which the step's
// own task records on a miss. An error fails the step with the reason
// returned.
func fromCache(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, lookup cacheLookup, now metav1.Time) (key string, hit bool, reason string, err error) {
	key, err = stepCacheKey(wf, i, st)
	if err != nil {
		return "", false, taskErrorReason(err), err
	}
	if key == "" || wf.Spec.NoCache || lookup == nil || retriedStep(wf, i) {
		return key, false, "", nil
	}
	t := cacheHit(lookup(schedv1.CacheKeyHash(key)), key, specStep(wf, i).Cache.MaxAge, now.Time)
	if t == nil {
		return key, false, "", nil
	}
	s := stepStatus(wf, st, i)
	done := *t.Status.CompletionTime.DeepCopy()
	from := &schedv1.CachedFrom{Task: t.Name, CompletionTime: &done}
	if ref := metav1.GetControllerOf(t); ref != nil && ref.Kind == "Workflow" && ref.APIVersion == schedv1.GroupVersion.String() {
		from.Workflow = ref.Name
	}
	s.Phase, s.Reason, s.TaskName = schedv1.StepSucceeded, schedv1.ReasonCacheHit, ""
	s.Outputs = maps.Clone(schedv1.StepOutputs(&t.Status))
	s.StartTime, s.CompletionTime = &now, &now
	s.CachedFrom = from
	s.Message = cacheHitMessage(from, now.Time)
	return key, true, "", nil
}

// newCacheHits says whether after records a cache hit that before did not.
func newCacheHits(before, after schedv1.WorkflowStatus) bool {
	had := map[string]bool{}
	for _, s := range slices.Concat(before.Steps, before.Finally) {
		had[s.Name] = s.Reason == schedv1.ReasonCacheHit
	}
	for _, s := range slices.Concat(after.Steps, after.Finally) {
		if s.Reason == schedv1.ReasonCacheHit && !had[s.Name] {
			return true
		}
	}
	return false
}

// retriedStep says whether step i is the one spec.retryOf asks to run
// again.
func retriedStep(wf *schedv1.Workflow, i int) bool {
	r := wf.Spec.RetryOf
	return r != nil && i < len(wf.Spec.Steps) && wf.Spec.Steps[i].Name == r.FromStep
}

// cacheHitMessage says where a hit's outputs came from.
func cacheHitMessage(from *schedv1.CachedFrom, now time.Time) string {
	what := "AgentTask " + from.Task
	if from.Workflow != "" {
		what += " of workflow " + from.Workflow
	}
	age := ""
	if from.CompletionTime != nil {
		age = fmt.Sprintf(", which succeeded %s ago", now.Sub(from.CompletionTime.Time).Round(time.Second))
	}
	return fmt.Sprintf("cache hit: took the outputs of %s%s with the same cache key; ran nothing ('workflow run --no-cache' runs every step)", what, age)
}

// markCacheKey records a step's resolved cache key on its task, so later
// steps with the same key find it.
func markCacheKey(t *schedv1.AgentTask, key string) {
	if key == "" {
		return
	}
	t.Labels[schedv1.LabelCacheKey] = schedv1.CacheKeyHash(key)
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[schedv1.AnnotationCacheKey] = key
}
