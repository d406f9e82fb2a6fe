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
	"k8s.io/apimachinery/pkg/api/equality"
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
	"github.com/kubectl-sched/kubectl-sched/api/wftemplate"
	"github.com/kubectl-sched/kubectl-sched/operator/agenttask"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/expiry"
	"github.com/kubectl-sched/kubectl-sched/operator/recent"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
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
	// with the AgentTask controller's checks (agenttask.Starter, shared
	// with it): a hand-off then waits on one work queue, not two. When nil
	// the AgentTask controller creates every Job.
	Jobs *agenttask.Starter

	// written is when each running workflow's status was last written
	// (statusWait), and the resourceVersion that write was made against
	// (cacheBehind).
	written recent.Times
}

// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=workflows,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=workflows/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=agenttasks,verbs=get;list;watch;create;patch
// A step task's Job, right after the task (agenttask.Starter).
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
	now := metav1.NewTime(r.Clock.Now())
	rules, err := expiry.Of(ctx, r.Client, wf.Namespace, r.DefaultTTL)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wf.Status.Phase.Finished() {
		// Its tier may have changed since it finished.
		st := *wf.Status.DeepCopy()
		st.Expiry = expiry.ForWorkflow(wf, st.CompletionTime, rules)
		if err := r.patchStatus(ctx, wf, st); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		return r.applyTTL(ctx, wf, now)
	}
	if wftemplate.Unresolved(wf) {
		return r.resolveTemplate(ctx, wf, now)
	}

	tasks, items, err := r.stepTasks(ctx, wf)
	if err != nil {
		return ctrl.Result{}, err
	}
	prev, err := r.retried(ctx, wf)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := decideCached(wf, tasks, items, prev, approvalRules{forbidSelf: r.ForbidSelfApproval}, r.cacheLookupIn(ctx, wf.Namespace), now)
	if newCacheHits(wf.Status, p.status) {
		crashpoint.Hit(crashpoint.StepCacheHit)
	}

	for _, t := range p.cancels {
		patch := client.MergeFrom(t.DeepCopy())
		t.Spec.Cancel = true
		if err := r.Patch(ctx, t, patch); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("stop step task %s: %w", t.Name, err)
		}
	}
	if err := r.placeWorkspaces(ctx, wf, tasks, items, &p); err != nil {
		return ctrl.Result{}, err
	}
	quotaErr, heldForWorkspace, err := r.prepareWorkspaces(ctx, wf, tasks, items, &p, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	errs, err := r.createStepTasks(ctx, wf, p.creates)
	if len(p.creates) > 0 {
		crashpoint.Hit(crashpoint.StepTasksCreated)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	for i, c := range p.creates {
		err := errs[i]
		if apierrors.IsAlreadyExists(err) {
			// Ours, which the cache has not seen yet (its event brings us
			// back), or someone else's, which the step never takes.
			taken, err := r.takenBy(ctx, wf, c.task.Name)
			if err != nil {
				return ctrl.Result{}, err
			}
			switch {
			case taken != nil && c.loop:
				itemFailed(wf, &p.status, c, nameTakenMessage(wf, taken), now)
			case taken != nil:
				nameTaken(wf, &p.status, c.step, taken, now)
			}
			continue
		}
		switch class := refusal.Classify(err); {
		case err == nil && c.loop:
			log.FromContext(ctx).V(1).Info("Created item AgentTask", "task", c.task.Name, "step", c.step, "item", c.item)
		case err == nil:
			log.FromContext(ctx).Info("Created step AgentTask", "task", c.task.Name, "step", c.step)
		case class == refusal.Final && c.loop:
			itemFailed(wf, &p.status, c, "the API server refused its AgentTask: "+refusal.Message(err), now)
		case class == refusal.Final:
			// Substituted outputs can make a task the server refuses;
			// retrying cannot change them, so the step fails.
			refused(wf, &p.status, c.step, refusal.Message(err), now)
		case class == refusal.Quota && c.loop:
			itemWaitingForQuota(wf, &p.status, c, refusal.Message(err))
			quotaErr = err
		case class == refusal.Quota:
			waitingForQuota(wf, &p.status, c.step, refusal.Message(err))
			quotaErr = err
		default:
			// The tasks created so far are found by name next time.
			return ctrl.Result{}, fmt.Errorf("create step task %s: %w", c.task.Name, err)
		}
	}

	p.status.Expiry = expiry.ForWorkflow(wf, p.status.CompletionTime, rules)
	wait := r.statusWait(wf, p.status, len(p.creates) > 0)
	if wait <= 0 && r.cacheBehind(wf) && !equality.Semantic.DeepEqual(wf.Status, p.status) {
		// The write would be refused as a Conflict: wait for the cache,
		// whose event of that last write brings the workflow back. The
		// creates above are done; the status waits for the next reconcile.
		wait = cacheBehindRecheck
	}
	if wait > 0 {
		if quotaErr != nil {
			return ctrl.Result{}, quotaErr
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.patchStatus(ctx, wf, p.status); err != nil {
		return ctrl.Result{}, err // a Conflict too: see status.Patch
	}
	if quotaErr != nil {
		// The workqueue's backoff paces the retries until the quota has room.
		return ctrl.Result{}, quotaErr
	}
	if wf.Status.Phase.Finished() {
		return r.applyTTL(ctx, wf, now)
	}
	if heldForWorkspace && (p.requeueAt.IsZero() || p.requeueAt.Sub(now.Time) > workspaceRecheck) {
		return ctrl.Result{RequeueAfter: workspaceRecheck}, nil
	}
	if !p.requeueAt.IsZero() {
		return ctrl.Result{RequeueAfter: p.requeueAt.Sub(now.Time)}, nil
	}
	return ctrl.Result{}, nil
}

// get reads a workflow from the cache without copying its spec, which no
// reconcile changes: the spec stays the cache's, read only, and the
// metadata and status, which a reconcile changes, are copies. A status
// write goes through patchStatus, which never decodes into this object's
// spec. A workflow whose spec the cache does not hold whole (TrimWorkflow)
// is read past the cache.
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey, wf *schedv1.Workflow) error {
	if err := r.Get(ctx, key, wf, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if agenttask.Trimmed(wf) {
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
	if err == nil && agenttask.Trimmed(prev) {
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

// statusWait is how long the workflow's new status st waits to be written.
// What a user or the next step waits on is written at once: the workflow
// starting or ending, a step ending (or skipped, or waiting for approval),
// and the steps just created, which their next reconcile finds by it. A
// change that only mirrors a running step's task (Pending to Running, a
// new message) is written at most once per recent.StatusPace: with the
// tasks' own pacing, a step that ends within a second costs its workflow
// two status writes, its start and its end, instead of four.
func (r *Reconciler) statusWait(wf *schedv1.Workflow, st schedv1.WorkflowStatus, created bool) time.Duration {
	before := &wf.Status
	if created || st.Phase != before.Phase || st.Phase.Finished() || stepEnded(before.Steps, st.Steps) || stepEnded(before.Finally, st.Finally) ||
		equality.Semantic.DeepEqual(before, &st) {
		return 0
	}
	return recent.StatusWait(&r.written, wf.UID, wf.CreationTimestamp.Time, r.Clock.Now())
}

// cacheBehind says whether the cached wf is the one this controller's
// last status write of it was made against: the cache has not seen that
// write yet. A write now would be refused as a Conflict (status.Patch is
// conditional), after a round trip that, when steps end together (a
// fan-in), delays the reconcile that starts the next step.
func (r *Reconciler) cacheBehind(wf *schedv1.Workflow) bool {
	v := r.written.Version(wf.UID)
	return v != "" && v == wf.ResourceVersion
}

// cacheBehindRecheck is how soon a reconcile that found the cache behind
// its own last status write looks again, should that write's event not
// bring the workflow back first.
const cacheBehindRecheck = time.Second

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

// patchStatus writes the status when it changed and emits an event when a
// step ends (or starts waiting for approval) and when the workflow ends.
// Its start, and a step's Pending and Running, are in the status only: each
// event is an API write.
func (r *Reconciler) patchStatus(ctx context.Context, wf *schedv1.Workflow, st schedv1.WorkflowStatus) error {
	// The patch is of the metadata and status alone, and the API server's
	// answer lands in a workflow of its own: wf's spec is the cache's (get).
	before := &schedv1.Workflow{ObjectMeta: wf.ObjectMeta, Status: wf.Status}
	after := &schedv1.Workflow{ObjectMeta: *wf.ObjectMeta.DeepCopy(), Status: st}
	wf.Status = st
	wrote, err := status.Patch(ctx, r.Client, after, before)
	if err != nil || !wrote {
		return err
	}
	wf.ObjectMeta, wf.Status = after.ObjectMeta, after.Status
	switch {
	case st.Phase.Finished():
		r.written.Forget(wf.UID)
	case wf.ResourceVersion != before.ResourceVersion:
		// Kept with the version written against (cacheBehind); a write
		// the API server found unchanged made no new version.
		r.written.AddVersion(wf.UID, r.Clock.Now(), before.ResourceVersion)
	default:
		r.written.Add(wf.UID, r.Clock.Now())
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
	return nil
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
