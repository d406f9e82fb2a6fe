// Package agenttask reconciles AgentTasks: one Job per task, a status that
// explains every phase, and outputs read from the container's termination
// message before anything may delete the pod.
package agenttask

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/expiry"
	"github.com/kubectl-sched/kubectl-sched/operator/metrics"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/placement"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
	"github.com/kubectl-sched/kubectl-sched/operator/recent"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// podTaskIndex indexes the cached pods by their task label.
const podTaskIndex = "agenttask.pods.byTask"

// eventJobIndex indexes the cached FailedCreate events by the UID of the
// Job they are about.
const eventJobIndex = "agenttask.events.byJob"

// cpuSchedulerIndex indexes the unfinished tasks whose pod waits for a node
// (Unschedulable or CPUSchedulerUnavailable) by their placement.cpuScheduler:
// a SchedExt or node label change concerns only them.
const cpuSchedulerIndex = "agenttask.byCPUSchedulerWait"

// waitsForCPUScheduler is a task's cpuSchedulerIndex value.
func waitsForCPUScheduler(o client.Object) []string {
	task, ok := o.(*schedv1.AgentTask)
	if !ok || task.Spec.Placement == nil || task.Spec.Placement.CPUScheduler == "" || task.Status.Phase.Finished() {
		return nil
	}
	if r := task.Status.Reason; r == schedv1.ReasonUnschedulable || r == schedv1.ReasonCPUSchedulerUnavailable {
		return []string{task.Spec.Placement.CPUScheduler}
	}
	return nil
}

// Reconciler reconciles AgentTasks.
type Reconciler struct {
	client.Client
	// APIReader reads pods past the cache when a finished Job's pod is not
	// in it yet (the pod and Job informers resync separately, for example
	// after an API server restart), and a task whole to build its Job.
	APIReader       client.Reader
	Recorder        recorder.EventRecorder
	PriorityClasses map[string]string
	// ToolsImage clones tasks' spec.repos when Jobs is not given.
	ToolsImage string
	Clock      clock.PassiveClock
	// DefaultTTL deletes finished tasks whose spec and tier set no TTL
	// (--default-ttl); 0 keeps them.
	DefaultTTL time.Duration
	// SucceededPodRetention is how long a succeeded task's pod is kept
	// after the task finished (--succeeded-pod-retention); 0 keeps it as
	// long as the task.
	SucceededPodRetention time.Duration
	// Jobs creates the tasks' Jobs, shared with the Workflow controller,
	// which creates its steps' Jobs itself; one of the Reconciler's own
	// when nil.
	Jobs *taskjob.Starter
	// Logs reads the ends of the tasks' pods' logs to keep in their
	// status (logs.go); the manager's client when nil.
	Logs corev1client.PodsGetter
	// Namespace is the operator's own, where its service account is: the
	// subject of the RoleBindings that let it read pods' logs.
	Namespace string

	// released remembers the pods this controller released lately, so
	// that a reconcile whose pod cache has not yet seen a release does
	// not send it again.
	released recent.Times
	// writer writes the tasks' statuses: only what changed, an unfinished
	// task's paced (statusPace), never from a cache behind its own last
	// write.
	writer status.Writer
	// quiet are the nodes whose kubelets lately served no log, and why;
	// bound, the namespaces where the operator made or found its
	// RoleBinding to read logs, and when.
	quiet, bound byName
}

// statusPace says whether task's new status may wait: an unfinished
// task's status is written at most once per status.StatusPace, and not in
// the first after the controller saw it (status.Paced). A task that ends
// within it gets one status write, when it ends, rather than one for
// Pending, Running and the end: each is an API write, and a step's becomes
// a write of its workflow's status too. The end is written at once (a
// workflow's next step waits for it), and so are kept logs (their pods
// are released once the status holds them); Pending and Running show up to
// a second late.
func statusPace(task *schedv1.AgentTask, keptLogs bool) status.Pace {
	if task.Status.Phase.Finished() || keptLogs {
		return status.Now
	}
	return status.Paced
}

// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=agenttasks,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=agenttasks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// Pods: patched only to release the outputs finalizer, deleted only when
// a succeeded task's Job made them (kubectl-sched-operator-pod-patch).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=workflows,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// placement.cpuScheduler: which nodes run it, and which SchedExts load it.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=schedexts,verbs=get;list;watch
// Pods' logs: never cluster-wide. The operator binds itself to the
// ClusterRole kubectl-sched-operator-pod-logs (config/rbac) in a namespace
// where it reads a task's pod's log; kubectl-sched-operator-rolebindings
// holds it to that one binding.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=kubectl-sched-operator-pod-logs

// Reconcile moves one AgentTask along: create its Job, follow the Job and
// pod, record outputs, release the pod, apply the TTL.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	task := &schedv1.AgentTask{}
	if err := r.Get(ctx, req.NamespacedName, task); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: let its pods go too, or they would wait on our finalizer.
			return ctrl.Result{}, r.releaseDeleted(ctx, req.Namespace, req.Name, nil)
		}
		return ctrl.Result{}, err
	}
	if !task.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.releaseDeleted(ctx, task.Namespace, task.Name, task)
	}
	// The order keeps a step idempotent: the Job before the status that
	// names it, the status that keeps the outputs and logs (and names the
	// pods pruned) before any pod goes.
	return phase.Run(ctx, &scope{task: task},
		r.stopIfNamespaceEnds,
		r.observeTask,
		r.deleteRefusedJob,
		r.ensureJob,
		r.suspendCancelled,
		r.holdForBackoff,
		r.readEndedLogs,
		r.writeStatus,
		r.deletePrunedPods,
		retryRefusedCreate,
		r.stopDisrupted,
		r.tidyFinished,
		r.wakeAfterBackoff,
	)
}

func (r *Reconciler) observe(ctx context.Context, task *schedv1.AgentTask) (observed, error) {
	var o observed
	job := &batchv1.Job{}
	err := r.Get(ctx, types.NamespacedName{Namespace: task.Namespace, Name: names.Job(task.Name)}, job)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return o, err
	case !metav1.IsControlledBy(job, task):
		// Someone else's Job of our name is never taken as ours.
		o.foreignJob = job
	default:
		o.job = job
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(task.Namespace), client.MatchingFields{podTaskIndex: names.Job(task.Name)}); err != nil {
		return o, err
	}
	// Only the Job's own pods, checked by UID: anyone who may create pods in
	// the namespace can label one like the task's and forge its termination
	// message.
	if o.job != nil {
		o.pods = controlledPods(pods.Items, o.job)
	}
	if o.job != nil && len(o.pods) == 0 && jobHadPods(o.job) && !task.Status.Phase.Finished() && r.APIReader != nil {
		// The Job has run a pod that our pod cache has not seen yet. The
		// pod is held by the outputs finalizer, so it exists unless removed
		// by hand: read it from the API server rather than conclude, from a
		// lagging cache, that its outputs are lost. A finished task's status
		// no longer changes, so it needs no such read.
		var live corev1.PodList
		if err := r.APIReader.List(ctx, &live, client.InNamespace(task.Namespace), client.MatchingLabels{schedv1.LabelAgentTask: names.Job(task.Name)}); err != nil {
			return o, err
		}
		o.pods = controlledPods(live.Items, o.job)
	}
	if err := r.observeCPUScheduler(ctx, task, &o); err != nil {
		return o, err
	}
	if o.job != nil && len(o.pods) == 0 {
		// This Job's events only: a lookup, however many the namespace has.
		var evs corev1.EventList
		if err := r.List(ctx, &evs, client.InNamespace(task.Namespace), client.MatchingFields{eventJobIndex: string(o.job.UID)}); err != nil {
			return o, err
		}
		var newest time.Time
		for _, e := range evs.Items {
			if e.InvolvedObject.UID != o.job.UID || e.Reason != "FailedCreate" {
				continue
			}
			if o.createFailure == "" || e.LastTimestamp.After(newest) {
				newest, o.createFailure = e.LastTimestamp.Time, e.Message
			}
		}
	}
	return o, nil
}

// observeCPUScheduler explains, for an unfinished task that asks for a CPU
// scheduler, a latest pod the scheduler cannot place: whether it is
// because no node it may run on has that scheduler attached. Only the
// caches are read (the nodes by scheduler, the SchedExts), and only for
// such a pod.
func (r *Reconciler) observeCPUScheduler(ctx context.Context, task *schedv1.AgentTask, o *observed) error {
	p := task.Spec.Placement
	if p == nil || p.CPUScheduler == "" || task.Status.Phase.Finished() {
		return nil
	}
	latest := latestPod(sortedPods(o.pods))
	if latest == nil || !podstatus.Unschedulable(latest) {
		return nil
	}
	_, msg, err := placement.CPUSchedulerCause(ctx, r.Client, p.CPUScheduler, latest.Spec.Affinity)
	o.noCPUScheduler = msg
	return err
}

// eventJob is an event's eventJobIndex value: its object's UID.
func eventJob(o client.Object) []string {
	if ev, ok := o.(*corev1.Event); ok && ev.InvolvedObject.UID != "" {
		return []string{string(ev.InvolvedObject.UID)}
	}
	return nil
}

// controlledPods keeps the pods that job controls.
func controlledPods(pods []corev1.Pod, job *batchv1.Job) []corev1.Pod {
	var out []corev1.Pod
	for _, pod := range pods {
		if metav1.IsControlledBy(&pod, job) {
			out = append(out, pod)
		}
	}
	return out
}

// jobHadPods reports whether the Job has counted a finished pod or finished
// itself: then a task with no pod in the cache is behind, not podless.
func jobHadPods(job *batchv1.Job) bool {
	return job.Status.Succeeded > 0 || job.Status.Failed > 0 || jobCondition(job, batchv1.JobComplete) != nil ||
		jobCondition(job, batchv1.JobSuccessCriteriaMet) != nil || jobFailed(job) != nil
}

// createJob creates task's Job (taskjob.Starter.CreateJob), and tells of a
// refusal that is not final in an event. The cache holds tasks without
// what only the Job reads (TrimTask): the Job is built from the task read
// whole, past the cache.
func (r *Reconciler) createJob(ctx context.Context, task *schedv1.AgentTask) (*batchv1.Job, error) {
	if cachetrim.Trimmed(task) {
		whole := &schedv1.AgentTask{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(task), whole); err != nil {
			return nil, fmt.Errorf("read task %s to build its Job: %w", task.Name, err)
		}
		if whole.UID != task.UID {
			return nil, fmt.Errorf("task %s was deleted and made again since the cache saw it", task.Name)
		}
		task = whole
	}
	return r.Jobs.CreateJob(ctx, task, func(job string, err error) {
		if refusal.Classify(err) != refusal.Final {
			// A final refusal is told once, by the Failed phase's event.
			r.Recorder.Eventf(task, nil, corev1.EventTypeWarning, schedv1.ReasonCreateFailed, "CreateJob", "cannot create Job %s: %v", job, err)
		}
	})
}

// suspendJob stops a cancelled task: the Job controller deletes its pod and
// keeps the Job, so the task's record stays complete.
func (r *Reconciler) suspendJob(ctx context.Context, job *batchv1.Job) error {
	patch := client.MergeFrom(job.DeepCopy())
	suspend := true
	job.Spec.Suspend = &suspend
	return r.Patch(ctx, job, patch)
}

// applyHold suspends the Job for a backoff or resumes it (planHold). Both
// patches are conditional on the resourceVersion the decision was made
// from: a cache that lags behind the operator's own last patch cannot make
// it hold or resume twice (the Conflict brings the task back once the
// cache has caught up).
func (r *Reconciler) applyHold(ctx context.Context, job *batchv1.Job, h jobHold) error {
	if job == nil || !h.suspend && !h.resume {
		return nil
	}
	spec := map[string]any{"suspend": h.suspend}
	if h.resume && h.activeDeadline != nil {
		// Resuming a Job restarts its activeDeadlineSeconds: it gets what
		// is left of spec.timeout.
		spec["activeDeadlineSeconds"] = *h.activeDeadline
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": job.ResourceVersion}, "spec": spec})
	if err != nil {
		return err
	}
	if err := r.Patch(ctx, job, client.RawPatch(types.MergePatchType, patch)); err != nil {
		what := map[bool]string{true: "hold", false: "resume"}[h.suspend]
		if apierrors.IsConflict(err) {
			// The Job controller wrote the Job since the cache read it.
			return fmt.Errorf("job %s changed since it was read, retrying the %s: %w", job.Name, what, err)
		}
		return fmt.Errorf("%s job %s: %w", what, job.Name, err)
	}
	if h.suspend {
		crashpoint.Hit(crashpoint.JobHeld)
		log.FromContext(ctx).Info("Holding Job until its backoff ends", "job", job.Name, "until", h.wake)
		return nil
	}
	crashpoint.Hit(crashpoint.JobResumed)
	log.FromContext(ctx).Info("Resumed Job after its backoff", "job", job.Name, "activeDeadlineSeconds", h.activeDeadline)
	return nil
}

// writeTaskStatus writes task's status, through r.writer, when it
// changed from before, and tells of it (statusChanged).
func (r *Reconciler) writeTaskStatus(ctx context.Context, task *schedv1.AgentTask, before *schedv1.AgentTaskStatus, pace status.Pace) (status.Outcome, error) {
	out, err := r.writer.Write(ctx, task, before, pace)
	if err == nil && out.Wrote {
		r.statusChanged(ctx, task, before)
	}
	return out, err // a Conflict too: see status.Patch
}

// statusChanged tells of a status written: an event for each retry, and
// one when the task ends: one per task, none for a task a workflow runs
// (its workflow's event tells the step's end). Pending and Running, which
// every task passes through, are in its status: each event is an API
// write, and a task's writes are what it costs the API server beyond a
// bare Job.
func (r *Reconciler) statusChanged(ctx context.Context, task *schedv1.AgentTask, before *schedv1.AgentTaskStatus) {
	if st := task.Status; st.Reason == schedv1.ReasonBackingOff && (before.Reason != schedv1.ReasonBackingOff || !before.NextAttemptTime.Equal(st.NextAttemptTime)) {
		// One event per retry: the status keeps only the latest attempt's
		// exit code and message, the events tell of each failed attempt.
		r.Recorder.Eventf(task, nil, corev1.EventTypeWarning, schedv1.ReasonBackingOff, "Retry", "%s", st.Message)
	}
	if before.Phase != task.Status.Phase {
		log.FromContext(ctx).Info("AgentTask phase changed", "from", before.Phase, "to", task.Status.Phase, "reason", task.Status.Reason)
		if !task.Status.Phase.Finished() {
			return
		}
		metrics.TaskDuration.WithLabelValues(string(task.Status.Phase)).Observe(r.Clock.Since(task.CreationTimestamp.Time).Seconds())
		if runByWorkflow(task) {
			return
		}
		typ := corev1.EventTypeNormal
		if task.Status.Phase == schedv1.TaskFailed || task.Status.Phase == schedv1.TaskTimeout {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(task, nil, typ, task.Status.Reason, string(task.Status.Phase), "%s", task.Status.Message)
	}
}

// runByWorkflow says whether a Workflow runs task, as a step's or a loop
// item's: its controller is a Workflow and it carries the workflow label,
// which only the operator may set (kubectl-sched-reserved-labels). The
// workflow emits the step's end, with the task's message, as an event
// related to the task; the task's own would be a second write telling the
// same.
func runByWorkflow(task *schedv1.AgentTask) bool {
	ref := metav1.GetControllerOf(task)
	_, labelled := task.Labels[schedv1.LabelWorkflow]
	return labelled && ref != nil && ref.Kind == "Workflow" && ref.APIVersion == schedv1.GroupVersion.String()
}

// releaseDeleted releases the pods of a deleted (or deleting) task: those
// its Job controls, matched by UID, never by name or label alone, which
// anyone who may create pods could copy. task is nil once it is gone; its
// Job then is the one of its Job name controlled by an AgentTask of its
// name (which no longer exists), and once that Job is gone too, its pods
// are those whose controller is a Job of that name that no longer exists.
func (r *Reconciler) releaseDeleted(ctx context.Context, ns, name string, task *schedv1.AgentTask) error {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{podTaskIndex: names.Job(name)}); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return nil
	}
	job := &batchv1.Job{}
	key := types.NamespacedName{Namespace: ns, Name: names.Job(name)}
	err := r.Get(ctx, key, job)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		// The cache keeps only labelled Jobs and may lag: ask before
		// concluding the Job is gone.
		err = r.APIReader.Get(ctx, key, job)
	}
	switch {
	case apierrors.IsNotFound(err):
		var orphans []corev1.Pod
		for _, pod := range list.Items {
			if ref := metav1.GetControllerOf(&pod); ref != nil && ref.Kind == "Job" && ref.Name == key.Name {
				orphans = append(orphans, pod)
			}
		}
		return r.releasePods(ctx, orphans)
	case err != nil:
		return err
	}
	ref := metav1.GetControllerOf(job)
	ours := ref != nil && ref.Kind == "AgentTask" && ref.Name == name
	if task != nil {
		ours = metav1.IsControlledBy(job, task)
	}
	if !ours {
		return nil
	}
	return r.releasePods(ctx, controlledPods(list.Items, job))
}

// namespaceTerminating says whether namespace ns is being deleted, from
// the cache; a namespace not found is not.
func (r *Reconciler) namespaceTerminating(ctx context.Context, ns string) (bool, error) {
	n := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return !n.DeletionTimestamp.IsZero(), nil
}

// releasePods removes the outputs finalizer from pods, which the caller
// matched to the task's Job by UID. A pod released in the last minute is
// not released again: the task's status event often brings its next
// reconcile before the pod's own event has reached the cache, and a second
// release would be a request for nothing.
func (r *Reconciler) releasePods(ctx context.Context, pods []corev1.Pod) error {
	for i := range pods {
		pod := &pods[i]
		if !slices.Contains(pod.Finalizers, OutputsFinalizer) || r.released.Within(pod.UID, r.Clock.Now()) {
			continue
		}
		patch := client.RawPatch(types.StrategicMergePatchType, []byte(schedv1.ReleaseOutputsPatch))
		if err := r.Patch(ctx, pod, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release pod %s: %w", pod.Name, err)
		}
		r.released.Add(pod.UID, r.Clock.Now())
	}
	return nil
}

// applyTTL deletes the task at status.expiry.deleteTime (its TTL with
// cleanup Task, or its tier's), and its Job alone at spec.ttlAfterFinished
// when cleanup is Job; otherwise it asks to come back at the next of them.
func (r *Reconciler) applyTTL(ctx context.Context, task *schedv1.AgentTask, job *batchv1.Job) (ctrl.Result, error) {
	now := r.Clock.Now()
	var next time.Duration
	if e := task.Status.Expiry; e != nil && e.DeleteTime != nil {
		if next = e.DeleteTime.Sub(now); next <= 0 {
			log.FromContext(ctx).Info("Deleting AgentTask after its TTL", "ttl", e.TTLAfterFinished.Duration, "source", e.Source)
			r.Recorder.Eventf(task, nil, corev1.EventTypeNormal, schedv1.ReasonExpired, "Delete", "deleted %s after it finished (%s)", tiers.FormatDuration(e.TTLAfterFinished.Duration), tiers.Why(e))
			return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, task, client.PropagationPolicy(metav1.DeletePropagationBackground)))
		}
	}
	if jobAt := ttlExpiry(task); job != nil && task.Spec.Cleanup != schedv1.CleanupTask && !jobAt.IsZero() {
		wait := jobAt.Sub(now)
		if wait <= 0 {
			log.FromContext(ctx).Info("Deleting Job after the task's TTL", "job", job.Name)
			if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		} else if next <= 0 || wait < next {
			next = wait
		}
	}
	return ctrl.Result{RequeueAfter: max(next, 0)}, nil
}

// SetupWithManager watches AgentTasks, their Jobs, their pods, the Job
// controller's FailedCreate events, and for tasks waiting for a CPU
// scheduler the SchedExts and the nodes' CPU scheduler label. It never
// polls.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.writer.Client, r.writer.Clock = r.Client, r.Clock
	if r.Jobs == nil {
		r.Jobs = &taskjob.Starter{Client: r.Client, APIReader: r.APIReader, PriorityClasses: r.PriorityClasses, ToolsImage: r.ToolsImage, Clock: r.Clock}
	}
	if r.Logs == nil {
		// The manager's HTTP client: its requests share the operator's
		// budget (--kube-api-qps).
		logs, err := corev1client.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return err
		}
		r.Logs = logs
	}
	if err := metrics.Register(mgr.GetCache()); err != nil {
		return err
	}
	// Finding a task's pods by label would scan every pod of the
	// namespace on each reconcile; the index makes it a lookup.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podTaskIndex, func(o client.Object) []string {
		if v, ok := o.GetLabels()[schedv1.LabelAgentTask]; ok {
			return []string{v}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Event{}, eventJobIndex, eventJob); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &schedv1.AgentTask{}, cpuSchedulerIndex, waitsForCPUScheduler); err != nil {
		return err
	}
	if err := refusal.IndexWaiting(context.Background(), mgr.GetFieldIndexer(), &schedv1.AgentTask{}, func(o client.Object) bool {
		task, ok := o.(*schedv1.AgentTask)
		return ok && task.Status.Reason == schedv1.ReasonQuotaExceeded
	}); err != nil {
		return err
	}
	tasks := func() client.ObjectList { return &schedv1.AgentTaskList{} }
	tasksOfCPUScheduler := placement.OnCPUSchedulerChange(mgr.GetClient(), tasks, cpuSchedulerIndex)
	byTaskLabel := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.taskForJobName(ctx, o.GetNamespace(), o.GetLabels()[schedv1.LabelAgentTask])
	})
	// The events cache holds every Job's FailedCreate events, most of them
	// about Jobs that are not the operator's: only those about a cached
	// Job (the operator's, by its labels) that a task controls wake a task.
	byEventJob := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		ev, ok := o.(*corev1.Event)
		if !ok || ev.InvolvedObject.Kind != "Job" {
			return nil
		}
		job := &batchv1.Job{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}, job); err != nil || job.UID != ev.InvolvedObject.UID {
			return nil
		}
		if ref := metav1.GetControllerOf(job); ref != nil && ref.Kind == "AgentTask" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: job.Namespace, Name: ref.Name}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&schedv1.AgentTask{}).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Pod{}, byTaskLabel, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, ok := o.GetLabels()[schedv1.LabelAgentTask]
			return ok
		}))).
		Watches(&corev1.Event{}, byEventJob).
		Watches(&corev1.ResourceQuota{}, refusal.OnQuotaChange(mgr.GetClient(), tasks),
			builder.WithPredicates(refusal.GivesRoom)).
		// A tier's TTLs changing, or a namespace's tier, moves the tasks'
		// expiry.
		Watches(&corev1.ResourceQuota{}, expiry.OnTierChange(mgr.GetClient(), tasks),
			builder.WithPredicates(expiry.QuotaChanged)).
		Watches(&corev1.Namespace{}, expiry.OnTierChange(mgr.GetClient(), tasks),
			builder.WithPredicates(expiry.TierLabelChanged)).
		// A namespace's deletion starting lets its tasks' pods go (see
		// Reconcile); the pods' own deletion events bring the tasks back
		// too, should this cache lag behind the pods'.
		Watches(&corev1.Namespace{}, expiry.OnTierChange(mgr.GetClient(), tasks),
			builder.WithPredicates(deletionStarted)).
		// An admin removing a namespace's opt-out stops its privileged tasks.
		Watches(&corev1.Namespace{}, podsecurity.OnOptOutChange(mgr.GetClient(), tasks,
			func(o client.Object) bool {
				task := o.(*schedv1.AgentTask)
				return !task.Status.Phase.Finished() && len(taskjob.PrivilegeAsked(task)) > 0
			}), builder.WithPredicates(podsecurity.OptOutChanged)).
		// A task waiting for a CPU scheduler: a SchedExt that loads it
		// changing, or a node gaining or losing it, changes what its
		// status says (the scheduler places the pod by itself).
		Watches(&schedv1.SchedExt{}, tasksOfCPUScheduler, builder.WithPredicates(placement.SchedExtOfferChanged)).
		Watches(&corev1.Node{}, tasksOfCPUScheduler, builder.WithPredicates(placement.CPUSchedulerLabelChanged)).
		WithOptions(opts).
		Named("agenttask").
		Complete(r)
}

// taskForJobName maps a Job name (also the pods' task label) to its task
// through the Job's controller reference; the name alone may be hashed.
func (r *Reconciler) taskForJobName(ctx context.Context, ns, jobName string) []reconcile.Request {
	if jobName == "" {
		return nil
	}
	job := &batchv1.Job{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: jobName}, job); err != nil {
		// Without the Job (deleted by the TTL) the label is the task name
		// whenever it was short enough to be used as is.
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: jobName}}}
	}
	if ref := metav1.GetControllerOf(job); ref != nil && ref.Kind == "AgentTask" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: ref.Name}}}
	}
	return nil
}

// deletionStarted passes the update that marks a namespace deleted.
var deletionStarted = watch.Updated(func(old, cur *corev1.Namespace) bool {
	return old.DeletionTimestamp.IsZero() && !cur.DeletionTimestamp.IsZero()
})
