// Package workflow reconciles Workflows: AgentTasks run one after another,
// each step's outputs substituted into the steps after it.
package workflow

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/expiry"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
)

// Reconciler reconciles Workflows.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache, to tell a deleted step task from one
	// the cache has not seen yet, and a workflow whose large spec the cache
	// does not hold whole.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// DefaultTTL deletes finished workflows whose spec and tier set no
	// TTL (--default-ttl); 0 keeps them.
	DefaultTTL time.Duration
	// ForbidSelfApproval: an approval by the user who asked for the run
	// (spec.requestedBy) does not count, nor carries over to a retry
	// (--forbid-self-approval).
	ForbidSelfApproval bool
	// Jobs, when set, creates each step task's Job right after the task,
	// with the AgentTask controller's checks (taskjob.Starter, shared
	// with it): a hand-off then waits on one work queue, not two. When nil
	// the AgentTask controller creates every Job.
	Jobs *taskjob.Starter

	// writer writes the workflows' statuses: only what changed, paced
	// (statusPace), never from a cache behind its own last write.
	writer status.Writer
}

// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=workflows,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=workflows/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=agenttasks,verbs=get;list;watch;create;patch
// A step task's Job, right after the task (taskjob.Starter).
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;create
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile reads the workflow and its step tasks, decides (plan.go), acts,
// and patches the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wf := &schedv1.Workflow{}
	if err := r.get(ctx, req.NamespacedName, wf); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !wf.DeletionTimestamp.IsZero() {
		// Owner references delete the step tasks, which stops the running step.
		return ctrl.Result{}, nil
	}
	// The order keeps a step idempotent: a step's task is created before
	// the status that counts it started, and found by name after a crash.
	return phase.Run(ctx, &scope{wf: wf, now: metav1.NewTime(r.Clock.Now())},
		r.readRules,
		r.tidyFinished,
		r.fillFromTemplate,
		r.decideSteps,
		r.cancelSteps,
		r.readyWorkspaces,
		r.createSteps,
		r.writeStatus,
		r.recheck,
	)
}

// get reads a workflow from the cache without copying its spec, which no
// reconcile changes: the spec stays the cache's, read only, and the
// metadata and status, which a reconcile changes, are copies. A status
// write goes through writeWorkflowStatus, which never decodes into this object's
// spec. A workflow whose spec the cache does not hold whole (TrimWorkflow)
// is read past the cache.
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey, wf *schedv1.Workflow) error {
	if err := r.Get(ctx, key, wf, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if cachetrim.Trimmed(wf) {
		*wf = schedv1.Workflow{}
		return r.APIReader.Get(ctx, key, wf)
	}
	wf.ObjectMeta = *wf.ObjectMeta.DeepCopy()
	wf.Status = *wf.Status.DeepCopy()
	return nil
}

// takenBy reads, past the cache, the AgentTask that holds a step task's
// name: nil when it is this workflow's own (checked by UID).
func (r *Reconciler) takenBy(ctx context.Context, wf *schedv1.Workflow, name string) (*schedv1.AgentTask, error) {
	t := &schedv1.AgentTask{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: wf.Namespace, Name: name}, t); err != nil {
		// Deleted since: the next reconcile creates it.
		return nil, fmt.Errorf("read step task %s after it already existed: %w", name, err)
	}
	if metav1.IsControlledBy(t, wf) {
		return nil, nil
	}
	return t, nil
}

// retried is the earlier attempt spec.retryOf names until this one has
// started (reuseSteps decides then), nil when there is none or it is gone.
func (r *Reconciler) retried(ctx context.Context, wf *schedv1.Workflow) (*schedv1.Workflow, error) {
	if wf.Spec.RetryOf == nil || wf.Status.StartTime != nil {
		return nil, nil
	}
	// Read only (decide reads its status): not copied.
	prev := &schedv1.Workflow{}
	key := client.ObjectKey{Namespace: wf.Namespace, Name: wf.Spec.RetryOf.Workflow}
	err := r.Get(ctx, key, prev, client.UnsafeDisableDeepCopy)
	if err == nil && cachetrim.Trimmed(prev) {
		// Its steps' specs and outputs, which a retry compares and reuses,
		// are not in the cache.
		prev = &schedv1.Workflow{}
		err = r.APIReader.Get(ctx, key, prev)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return prev, err
}

// createStepTasks creates the tasks of the steps that start now, each
// with its Job when r.Jobs is set, side by side (a fan-out of 20 would
// otherwise wait on 20 round trips in a row), and returns each task
// create's error in order.
func (r *Reconciler) createStepTasks(ctx context.Context, wf *schedv1.Workflow, creates []stepCreate) ([]error, error) {
	for _, c := range creates {
		if err := controllerutil.SetControllerReference(wf, c.task, r.Scheme()); err != nil {
			return nil, err
		}
	}
	create := func(t *schedv1.AgentTask) error { return r.Create(ctx, t) }
	if r.Jobs != nil {
		create = func(t *schedv1.AgentTask) error { return r.Jobs.CreateWithJob(ctx, t) }
	}
	errs := make([]error, len(creates))
	if len(creates) == 1 {
		errs[0] = create(creates[0].task)
		return errs, nil
	}
	var wg sync.WaitGroup
	limit := make(chan struct{}, maxParallelCreates)
	for i, c := range creates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			limit <- struct{}{}
			defer func() { <-limit }()
			errs[i] = create(c.task)
		}()
	}
	wg.Wait()
	return errs, nil
}

// maxParallelCreates bounds the step tasks created at once by one reconcile.
const maxParallelCreates = 50

// stepTaskIndex indexes the cached AgentTasks by the Workflow that
// controls them.
const stepTaskIndex = "workflow.tasks.byWorkflow"

// controllingWorkflow is a task's stepTaskIndex value.
func controllingWorkflow(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "Workflow" && ref.APIVersion == schedv1.GroupVersion.String() {
		return []string{ref.Name}
	}
	return nil
}

// stepTasks returns the workflow's step tasks by index, and its loops'
// item tasks by step and item index. Tasks are matched by owner and by the
// name the index and step name derive, so a renamed or foreign task is
// never taken for a step or an item.
func (r *Reconciler) stepTasks(ctx context.Context, wf *schedv1.Workflow) (map[int]*schedv1.AgentTask, itemTasks, error) {
	var list schedv1.AgentTaskList
	if err := r.List(ctx, &list, client.InNamespace(wf.Namespace), client.MatchingFields{stepTaskIndex: wf.Name}); err != nil {
		return nil, nil, err
	}
	tasks, items := map[int]*schedv1.AgentTask{}, itemTasks{}
	for i := range list.Items {
		t := &list.Items[i]
		if !metav1.IsControlledBy(t, wf) {
			continue
		}
		if idx, k, ok := itemIndex(wf, t); ok {
			items.add(idx, k, t)
		} else if idx, ok := stepIndex(wf, t); ok {
			tasks[idx] = t
		}
	}
	// A step the status says started, whose task the cache lacks, is either
	// new (the cache lags our create) or deleted: ask the API server.
	n := len(wf.Spec.Steps)
	started := map[int]schedv1.StepStatus{}
	for i, s := range wf.Status.Steps {
		if i < n {
			started[i] = s
		}
	}
	for j, s := range wf.Status.Finally {
		if j < len(wf.Spec.Finally) {
			started[n+j] = s
		}
	}
	for i, s := range started {
		if s.TaskName == "" || tasks[i] != nil || s.Phase.Finished() {
			continue
		}
		t, err := r.ownTask(ctx, wf, s.TaskName)
		if err != nil {
			return nil, nil, err
		}
		if t != nil {
			tasks[i] = t
		}
	}
	// The same for the items a running loop started.
	for i, s := range started {
		if s.ForEach == nil || s.Phase.Finished() || !isLoop(wf, i) {
			continue
		}
		for _, it := range s.ForEach.Items {
			k := int(it.Index)
			if it.Phase.Finished() || items[i][k] != nil {
				continue
			}
			t, err := r.ownTask(ctx, wf, itemTaskName(wf, i, k))
			if err != nil {
				return nil, nil, err
			}
			if t != nil {
				items.add(i, k, t)
			}
		}
	}
	return tasks, items, nil
}

// ownTask reads the AgentTask name past the cache: nil when it is not
// there, or not this workflow's.
func (r *Reconciler) ownTask(ctx context.Context, wf *schedv1.Workflow, name string) (*schedv1.AgentTask, error) {
	t := &schedv1.AgentTask{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: wf.Namespace, Name: name}, t)
	switch {
	case err == nil && metav1.IsControlledBy(t, wf):
		return t, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	}
	return nil, nil
}

func (it itemTasks) add(i, k int, t *schedv1.AgentTask) {
	if it[i] == nil {
		it[i] = map[int]*schedv1.AgentTask{}
	}
	it[i][k] = t
}

// itemIndex is the loop and item t runs, by its step and item labels and
// the name they derive, as stepIndex reads a step task's.
func itemIndex(wf *schedv1.Workflow, t *schedv1.AgentTask) (int, int, bool) {
	label, ok := t.Labels[schedv1.LabelWorkflowItem]
	if !ok {
		return 0, 0, false
	}
	k, err := strconv.Atoi(label)
	if err != nil || k < 0 || k >= schedv1.MaxItems || strconv.Itoa(k) != label {
		return 0, 0, false
	}
	i, ok := stepLabelIndex(wf, t.Labels[schedv1.LabelWorkflowStep])
	if !ok || !isLoop(wf, i) || t.Name != itemTaskName(wf, i, k) {
		return 0, 0, false
	}
	return i, k, true
}

// stepIndex is the step t runs, counted as decide counts (spec.steps, then
// spec.finally), by its step label and the name that label derives, so a
// renamed or foreign task is never taken for a step.
func stepIndex(wf *schedv1.Workflow, t *schedv1.AgentTask) (int, bool) {
	i, ok := stepLabelIndex(wf, t.Labels[schedv1.LabelWorkflowStep])
	if !ok || isLoop(wf, i) {
		return 0, false
	}
	want := names.StepTask(wf.Name, i, wf.Spec.Steps[min(i, len(wf.Spec.Steps)-1)].Name)
	if n := len(wf.Spec.Steps); i >= n {
		want = names.FinallyTask(wf.Name, i-n, wf.Spec.Finally[i-n].Name)
	}
	return i, t.Name == want
}

// stepLabelIndex reads a step label ("2", "finally0") as a step index,
// counted as decide counts.
func stepLabelIndex(wf *schedv1.Workflow, label string) (int, bool) {
	if j, ok := names.ParseFinallyStep(label); ok {
		return len(wf.Spec.Steps) + j, j < len(wf.Spec.Finally)
	}
	idx, err := strconv.Atoi(label)
	if err != nil || idx < 0 || idx >= len(wf.Spec.Steps) {
		return 0, false
	}
	return idx, true
}

// statusPace says whether the workflow's new status after may wait. What
// a user or the next step waits on is written at once: the workflow
// starting or ending, a step ending (or skipped, or waiting for approval),
// and the steps just created, which their next reconcile finds by it. A
// change that only mirrors a running step's task (Pending to Running, a
// new message) is written at most once per status.StatusPace: with the
// tasks' own pacing, a step that ends within a second costs its workflow
// two status writes, its start and its end, instead of four.
func statusPace(before, after *schedv1.WorkflowStatus, created bool) status.Pace {
	if created || after.Phase != before.Phase || after.Phase.Finished() || stepEnded(before.Steps, after.Steps) || stepEnded(before.Finally, after.Finally) {
		return status.Now
	}
	return status.Paced
}

// stepEnded says whether a step of after is in a phase other than Pending
// or Running that it was not in before.
func stepEnded(before, after []schedv1.StepStatus) bool {
	old := map[string]schedv1.StepPhase{}
	for _, s := range before {
		old[s.Name] = s.Phase
	}
	for _, s := range after {
		if s.Phase != old[s.Name] && s.Phase != schedv1.StepPending && s.Phase != schedv1.StepRunning {
			return true
		}
	}
	return false
}

// writeWorkflowStatus writes st, through r.writer at pace, when it differs
// from wf's status, and emits an event when a
// step ends (or starts waiting for approval) and when the workflow ends.
// Its start, and a step's Pending and Running, are in the status only: each
// event is an API write.
func (r *Reconciler) writeWorkflowStatus(ctx context.Context, wf *schedv1.Workflow, st schedv1.WorkflowStatus, pace status.Pace) (status.Outcome, error) {
	// The patch is of the metadata and status alone, and the API server's
	// answer lands in them: wf's spec is the cache's (get).
	before := &schedv1.Workflow{ObjectMeta: wf.ObjectMeta, Status: wf.Status}
	wf.Status = st
	out, err := r.writer.Write(ctx, wf, before.Status, pace)
	if err != nil || !out.Wrote {
		return out, err // a Conflict too: see status.Patch
	}
	r.stepEvents(wf, "step", before.Status.Steps, st.Steps)
	r.stepEvents(wf, "finally step", before.Status.Finally, st.Finally)
	if before.Status.Phase != st.Phase {
		log.FromContext(ctx).Info("Workflow phase changed", "from", before.Status.Phase, "to", st.Phase, "reason", st.Reason)
	}
	if before.Status.Phase != st.Phase && st.Phase.Finished() {
		typ := corev1.EventTypeNormal
		if st.Phase == schedv1.WorkflowFailed || st.Phase == schedv1.WorkflowTimeout {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(wf, nil, typ, st.Reason, string(st.Phase), "%s", st.Message)
	}
	return out, nil
}

// stepEvents emits an event for each step of after that ended, or began
// waiting for approval, since before; what names the list ("step",
// "finally step"). Pending and Running, which every step passes through,
// are in the status: each event is an API write, two per step.
func (r *Reconciler) stepEvents(wf *schedv1.Workflow, what string, before, after []schedv1.StepStatus) {
	old := map[string]schedv1.StepPhase{}
	for _, s := range before {
		old[s.Name] = s.Phase
	}
	for i, s := range after {
		reason, told := stepEventReasons[s.Phase]
		if old[s.Name] == s.Phase || !told {
			continue
		}
		typ := corev1.EventTypeNormal
		if s.Phase == schedv1.StepFailed || s.Phase == schedv1.StepTimeout {
			typ = corev1.EventTypeWarning
		}
		note := fmt.Sprintf("%s %d (%s) %s", what, i, s.Name, s.Phase)
		if s.Message != "" && (s.Phase != schedv1.StepSucceeded || s.Reason == schedv1.ReasonApproved || s.Reason == schedv1.ReasonCacheHit) {
			// The phase says it was skipped.
			note += ": " + strings.TrimPrefix(s.Message, "skipped: ")
		}
		// The events API folds an event into an earlier one about the same
		// object, reason and related object, dropping its note: two steps
		// that end alike in one status write would tell as one. A step's
		// event is related to its task, so each has its own.
		var related runtime.Object
		if s.TaskName != "" {
			related = &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: s.TaskName, Namespace: wf.Namespace}}
		} else if s.CachedFrom != nil {
			related = &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: s.CachedFrom.Task, Namespace: wf.Namespace}}
		}
		r.Recorder.Eventf(wf, related, typ, reason, "Step", "%s", note)
	}
}

// stepEventReasons names the event for a step reaching each phase that
// is told by one.
var stepEventReasons = map[schedv1.StepPhase]string{
	schedv1.StepWaitingForApproval: schedv1.ReasonStepWaitingForApproval,
	schedv1.StepSucceeded:          schedv1.ReasonStepSucceeded,
	schedv1.StepFailed:             schedv1.ReasonStepFailed,
	schedv1.StepTimeout:            schedv1.ReasonStepTimeout,
	schedv1.StepSkipped:            schedv1.ReasonStepSkipped,
	schedv1.StepCancelled:          schedv1.ReasonStepCancelled,
}

// applyTTL deletes the finished workflow at status.expiry.deleteTime (its
// spec.ttlAfterFinished, or its tier's); the garbage collector deletes its
// step tasks with it.
func (r *Reconciler) applyTTL(ctx context.Context, wf *schedv1.Workflow, now metav1.Time) (ctrl.Result, error) {
	e := wf.Status.Expiry
	if e == nil || e.DeleteTime == nil {
		return ctrl.Result{}, nil
	}
	if wait := e.DeleteTime.Sub(now.Time); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	log.FromContext(ctx).Info("Deleting Workflow after its TTL", "ttl", e.TTLAfterFinished.Duration, "source", e.Source)
	r.Recorder.Eventf(wf, nil, corev1.EventTypeNormal, schedv1.ReasonExpired, "Delete", "deleted %s after it finished, with its step tasks (%s)", tiers.FormatDuration(e.TTLAfterFinished.Duration), tiers.Why(e))
	return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, wf, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

// SetupWithManager watches Workflows and the AgentTasks they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.writer.Client, r.writer.Clock = r.Client, r.Clock
	if err := refusal.IndexWaiting(context.Background(), mgr.GetFieldIndexer(), &schedv1.Workflow{}, func(o client.Object) bool {
		wf, ok := o.(*schedv1.Workflow)
		return ok && wf.Status.Reason == schedv1.ReasonQuotaExceeded
	}); err != nil {
		return err
	}
	// A workflow's step tasks by a lookup, not a scan of every task in its
	// namespace on each reconcile.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &schedv1.AgentTask{}, stepTaskIndex, controllingWorkflow); err != nil {
		return err
	}
	// Cached step results by key hash (stepcache.go), looked up in the
	// namespace of the workflow asking.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &schedv1.AgentTask{}, cacheKeyIndex, cacheKeyOf); err != nil {
		return err
	}
	workflows := func() client.ObjectList { return &schedv1.WorkflowList{} }
	return ctrl.NewControllerManagedBy(mgr).
		For(&schedv1.Workflow{}).
		Owns(&schedv1.AgentTask{}).
		Watches(&corev1.ResourceQuota{}, refusal.OnQuotaChange(mgr.GetClient(), workflows),
			builder.WithPredicates(refusal.GivesRoom)).
		// A tier's TTLs changing, or a namespace's tier, moves the
		// workflows' expiry.
		Watches(&corev1.ResourceQuota{}, expiry.OnTierChange(mgr.GetClient(), workflows),
			builder.WithPredicates(expiry.QuotaChanged)).
		Watches(&corev1.Namespace{}, expiry.OnTierChange(mgr.GetClient(), workflows),
			builder.WithPredicates(expiry.TierLabelChanged)).
		WithOptions(opts).
		Named("workflow").
		Complete(r)
}
