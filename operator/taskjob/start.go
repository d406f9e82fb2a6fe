package taskjob

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/metrics"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
	"github.com/kubectl-sched/kubectl-sched/operator/recent"
)

// Starter creates tasks' Jobs, for the AgentTask controller and for the
// Workflow controller, which creates a step's (or a loop item's) Job right
// after its task, in the same reconcile (CreateWithJob): a hand-off then
// waits on one controller's work queue, not on two. Both go through the
// same checks (a privilege the namespace does not allow, a Job name that
// someone else's Job holds); whatever the Workflow controller does not
// create is left to the AgentTask controller, which explains it in the
// task's status. A task never gets two Jobs: a Job's name derives from its
// task's, so a second create is refused as AlreadyExists, and the Starter
// remembers the Jobs the Workflow controller is creating or has just
// created, so that the AgentTask controller does not send the same create
// again from a cache that has not seen it (LeftToWorkflow).
type Starter struct {
	Client client.Client
	// APIReader reads past the cache: the namespace's privilege opt-out,
	// and the Job that holds a task's Job name.
	APIReader       client.Reader
	PriorityClasses map[string]string
	// AnnotationDomains are the domains of the pod annotation keys a task
	// may pass (--allowed-pod-annotation-domains).
	AnnotationDomains []string
	Clock             clock.PassiveClock
	// ToolsImage runs the helpers in tasks' pods (settings' tools-image,
	// else the operator's own image): the clone of spec.repos and the
	// file outputs sidecar.
	ToolsImage string

	mu sync.Mutex
	// starting counts, per task, the Workflow controller's creates in
	// flight, from before the task's create to after its Job's.
	starting map[types.NamespacedName]int
	// created is when the Workflow controller created each task's Job,
	// until the AgentTask controller's cache shows it (JobSeen).
	created recent.Times
}

// Leave-to-workflow waits (LeftToWorkflow): how soon the AgentTask
// controller looks again at a task whose Job the Workflow controller is
// creating (should that create fail, it is the AgentTask controller's to
// retry and explain), and at one whose Job it created and the cache does
// not show yet (the Job's event normally brings the task back first).
const (
	startingRecheck = 250 * time.Millisecond
	createdRecheck  = time.Second
)

// CreateWithJob creates task, a step's or a loop item's AgentTask of a
// Workflow, and then its Job. It returns the task's create error only: a
// Job it could not create (a privilege refused, a quota, a name taken, an
// API error) is left to the AgentTask controller, which tries again and
// says why in the task's status.
func (s *Starter) CreateWithJob(ctx context.Context, task *schedv1.AgentTask) error {
	key := types.NamespacedName{Namespace: task.Namespace, Name: task.Name}
	s.hold(key)
	defer s.release(key)
	if err := s.Client.Create(ctx, task); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.StepTaskCreated)
	logger := log.FromContext(ctx).WithValues("task", task.Name)
	switch _, refused, err := s.Refused(ctx, task); {
	case err != nil:
		logger.V(1).Info("Left the Job to the AgentTask controller", "err", err)
		return nil
	case refused != "":
		return nil // the AgentTask controller fails the task, saying why
	}
	job, err := s.CreateJob(ctx, task, nil)
	if err != nil || job == nil {
		logger.V(1).Info("Left the Job to the AgentTask controller", "err", err)
		return nil
	}
	s.created.Add(task.UID, s.now())
	return nil
}

func (s *Starter) hold(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starting == nil {
		s.starting = map[types.NamespacedName]int{}
	}
	s.starting[key]++
}

func (s *Starter) release(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starting[key]--; s.starting[key] <= 0 {
		delete(s.starting, key)
	}
}

// LeftToWorkflow says how long the AgentTask controller should wait
// before it creates the Job of task, which its cache does not show: the
// Workflow controller is creating it, or created it in the last minute.
// Zero: create it now.
func (s *Starter) LeftToWorkflow(task *schedv1.AgentTask) time.Duration {
	s.mu.Lock()
	starting := s.starting[types.NamespacedName{Namespace: task.Namespace, Name: task.Name}] > 0
	s.mu.Unlock()
	switch {
	case starting:
		return startingRecheck
	case s.created.Within(task.UID, s.now()):
		return createdRecheck
	}
	return 0
}

// JobSeen forgets that the Workflow controller created task's Job, once
// the AgentTask controller's cache shows it.
func (s *Starter) JobSeen(task *schedv1.AgentTask) {
	if _, ok := s.created.At(task.UID); ok {
		s.created.Forget(task.UID)
	}
}

func (s *Starter) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// Refused says, with its reason, why an unfinished task may not run as its
// spec asks: it asks for privilege (podsecurity.Violations) and its
// namespace is not, or no longer, opted out; or it passes pod annotations
// of a domain the operator's settings do not allow. Admission refuses such
// a spec from the start; this catches what was admitted while an admin's
// opt-out label was there, before a setting changed, or where the
// admission policies are missing.
func (s *Starter) Refused(ctx context.Context, task *schedv1.AgentTask) (reason, msg string, err error) {
	if task.Status.Phase.Finished() {
		return "", "", nil
	}
	if reason, msg := s.reposRefused(task); reason != "" {
		return reason, msg, nil
	}
	if reason, msg := s.outputsRefused(task); reason != "" {
		return reason, msg, nil
	}
	if fields := PrivilegeAsked(task); len(fields) > 0 {
		allowed, err := podsecurity.AllowsPrivileged(ctx, s.Client, s.APIReader, task.Namespace)
		if err != nil {
			return "", "", err
		}
		if !allowed {
			return schedv1.ReasonPrivilegedNotAllowed, podsecurity.NotAllowed(task.Namespace, fields) +
				"; its Job was deleted, or never created: remove the field(s) and create the task again", nil
		}
	}
	if task.Spec.PodMetadata != nil {
		if fields := podsecurity.DisallowedAnnotations("spec", task.Spec.PodMetadata.Annotations, s.AnnotationDomains); len(fields) > 0 {
			return schedv1.ReasonAnnotationNotAllowed, podsecurity.AnnotationsNotAllowed(fields, s.AnnotationDomains) +
				"; its Job was deleted, or never created: remove the annotation(s), or ask a cluster admin to allow the domain, and create the task again", nil
		}
	}
	return "", "", nil
}

// CreateJob creates task's Job. A nil Job and no error: the Job exists and
// is the task's, but the cache has not seen it (its event brings the task
// back); a NameTakenError: someone else's Job holds the name. refused, when
// not nil, hears of a create the API server refused.
func (s *Starter) CreateJob(ctx context.Context, task *schedv1.AgentTask, refused func(job string, err error)) (*batchv1.Job, error) {
	job := buildJob(task, s.PriorityClasses)
	// The clone runs first, so the outputs sidecar starts only for a
	// checked-out task.
	if err := mountRepos(&job.Spec.Template.Spec, &task.Spec, s.ToolsImage); err != nil {
		return nil, err
	}
	if err := s.addOutputs(ctx, task, &job.Spec.Template.Spec); err != nil {
		return nil, err
	}
	if tmpl := &job.Spec.Template.Spec; tmpl.PriorityClassName == "" {
		// The tier's class, when the cluster's default class is above it
		// (its priority quota would refuse a pod that names none).
		limits, err := tiers.LimitsOf(ctx, s.Client, task.Namespace)
		if err != nil {
			return nil, err
		}
		if limits != nil {
			tmpl.PriorityClassName = limits.DefaultPriorityClass
		}
	}
	if err := controllerutil.SetControllerReference(task, job, s.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := s.Client.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, s.existingJob(ctx, task, job.Name)
		}
		if refused != nil {
			refused(job.Name, err)
		}
		return nil, fmt.Errorf("create job %s: %w", job.Name, err)
	}
	crashpoint.Hit(crashpoint.JobCreated)
	// No event: the Job is in the task's status (jobName), and the Job
	// controller tells of its pod; one event per task, when it ends.
	log.FromContext(ctx).Info("Created Job", "job", job.Name)
	if finished, ok := s.handoffStart(ctx, task); ok {
		metrics.StepHandoff.Observe(s.now().Sub(finished).Seconds())
	}
	return job, nil
}

// handoffStart is when the previous step of a workflow finished, from the
// annotation the Workflow controller sets on a step's task. Anyone who may
// create a task can write the annotation too, and skew the hand-off
// histogram the cluster's admins read; it counts only on a step task as
// the Workflow controller makes one: controlled by a Workflow the cache
// holds with that UID, named and labelled as that workflow's step (labels
// only the operator's account may set), and stamped just before the task
// was created.
func (s *Starter) handoffStart(ctx context.Context, task *schedv1.AgentTask) (time.Time, bool) {
	at, ok := task.Annotations[schedv1.AnnotationPreviousStepFinished]
	if !ok {
		return time.Time{}, false
	}
	finished, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return time.Time{}, false
	}
	ref := metav1.GetControllerOf(task)
	if ref == nil || ref.Kind != "Workflow" || ref.APIVersion != schedv1.GroupVersion.String() {
		return time.Time{}, false
	}
	// Read only: not copied from the cache.
	wf := &schedv1.Workflow{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: task.Namespace, Name: ref.Name}, wf, client.UnsafeDisableDeepCopy); err != nil || wf.UID != ref.UID {
		return time.Time{}, false
	}
	isStep := false
	for i, st := range wf.Spec.Steps {
		isStep = isStep || task.Name == names.StepTask(wf.Name, i, st.Name) &&
			task.Labels[schedv1.LabelWorkflow] == names.Join(wf.Name) && task.Labels[schedv1.LabelWorkflowStep] == strconv.Itoa(i)
	}
	// The controller stamps the time just before it creates the task, whose
	// creation timestamp has whole seconds.
	created := task.CreationTimestamp.Time
	if !isStep || finished.Before(wf.CreationTimestamp.Time) || finished.Before(created.Add(-handoffStampSlack)) || finished.After(created.Add(time.Second)) {
		return time.Time{}, false
	}
	return finished, true
}

// handoffStampSlack bounds how long before a step task's creation the
// Workflow controller's stamp may be: the creates of one pass, throttled.
const handoffStampSlack = 10 * time.Second

// NameTakenError is a Job of the task's Job name that another owner
// controls (or nobody does).
type NameTakenError struct{ Job *batchv1.Job }

func (e *NameTakenError) Error() string { return "job " + e.Job.Name + " belongs to someone else" }

// existingJob tells, past the cache (which keeps only the operator's
// labelled Jobs), whether the Job that took the task's Job name is the
// task's own, which the cache has not seen yet (nil: its event brings us
// back), or someone else's (a NameTakenError).
func (s *Starter) existingJob(ctx context.Context, task *schedv1.AgentTask, name string) error {
	reader := s.APIReader
	if reader == nil {
		reader = s.Client
	}
	job := &batchv1.Job{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: task.Namespace, Name: name}, job); err != nil {
		// Deleted since: the retry creates it.
		return fmt.Errorf("read job %s after it already existed: %w", name, err)
	}
	if metav1.IsControlledBy(job, task) {
		return nil
	}
	return &NameTakenError{Job: job}
}
