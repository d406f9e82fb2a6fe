package agenttask

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

var (
	t0  = metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	t1  = metav1.NewTime(t0.Add(time.Second))
	t2  = metav1.NewTime(t0.Add(2 * time.Second))
	now = metav1.NewTime(t0.Add(time.Minute))
)

// jobWrapper and podWrapper build the Kubernetes side of a test case.
type jobWrapper struct{ batchv1.Job }

func makeJob() *jobWrapper {
	return &jobWrapper{batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", UID: "job-uid"}}}
}
func (j *jobWrapper) cond(t batchv1.JobConditionType, reason string) *jobWrapper {
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: "job says " + reason})
	return j
}
func (j *jobWrapper) suspended() *jobWrapper { j.Spec.Suspend = ptr.To(true); return j }
func (j *jobWrapper) created(at metav1.Time) *jobWrapper {
	j.CreationTimestamp = at
	return j
}
func (j *jobWrapper) obj() *batchv1.Job { return &j.Job }

type podWrapper struct{ corev1.Pod }

func makePod(name string, created metav1.Time) *podWrapper {
	return &podWrapper{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: created}}}
}
func (p *podWrapper) running(at metav1.Time) *podWrapper {
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}}
	return p
}
func (p *podWrapper) exited(code int32, msg string, at metav1.Time) *podWrapper {
	p.Status.Phase = corev1.PodSucceeded
	if code != 0 {
		p.Status.Phase = corev1.PodFailed
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Message: msg, StartedAt: t0, FinishedAt: at}}}}
	return p
}
func (p *podWrapper) waiting(reason, msg string) *podWrapper {
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: "nope:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	return p
}
func (p *podWrapper) unschedulable(msg string) *podWrapper {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}
	return p
}
func (p *podWrapper) disrupted(reason string) *podWrapper {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, Message: "preempted by a higher-priority pod"})
	return p
}
func (p *podWrapper) cloned(msg string) *podWrapper {
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: CloneContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 0, Message: msg, StartedAt: t0, FinishedAt: t0}}}}
	return p
}

// cloneFailed: the clone init container failed, so the task's container
// never ran.
func (p *podWrapper) cloneFailed(code int32, msg string, at metav1.Time) *podWrapper {
	p.Status.Phase = corev1.PodFailed
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: CloneContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Message: msg, StartedAt: t0, FinishedAt: at}}}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	return p
}
func (p *podWrapper) deleted(at metav1.Time) *podWrapper { p.DeletionTimestamp = &at; return p }
func (p *podWrapper) obj() corev1.Pod                    { return p.Pod }

// want is the part of the status a case checks; conditions are checked
// separately for the Ready and Succeeded reasons.
type want struct {
	Phase           schedv1.AgentTaskPhase
	Reason          string
	Message         string
	ExitCode        *int32
	Attempts        int32
	PodName         string
	Outputs         map[string]string
	CompletionTime  *metav1.Time
	NextAttemptTime *metav1.Time
	ReadyStatus     metav1.ConditionStatus
}

func TestComputeStatus(t *testing.T) {
	task := MakeAgentTask("t", "ns").Image("busybox").Timeout(time.Minute).Obj()
	cases := map[string]struct {
		task *schedv1.AgentTask
		o    observed
		want want
	}{
		"job not created yet": {
			o:    observed{},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonPending, Message: "creating the Job", ReadyStatus: metav1.ConditionFalse},
		},
		"job refused for good": {
			o: observed{createErr: apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "t", field.ErrorList{field.TooLong(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("args").Index(0), "", 4096)})},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonRejected, CompletionTime: &now, ReadyStatus: metav1.ConditionFalse,
				Message: `the API server refused the task's Job: Job.batch "t" is invalid: spec.template.spec.containers[0].args[0]: Too long: may not be more than 4096 bytes; change the task's spec and create it again`},
		},
		"job waiting for quota": {
			o: observed{createErr: apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "t", errors.New("exceeded quota: q, requested: count/jobs.batch=1"))},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonQuotaExceeded, ReadyStatus: metav1.ConditionFalse,
				Message: `waiting for quota to create the Job: jobs.batch "t" is forbidden: exceeded quota: q, requested: count/jobs.batch=1`},
		},
		"privilege no longer allowed fails it, pod and all": {
			o: observed{pods: []corev1.Pod{makePod("t-a", t0).running(t1).obj()}, notAllowed: "spec.securityContext.privileged: not allowed in namespace ns", notAllowedReason: schedv1.ReasonPrivilegedNotAllowed},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonPrivilegedNotAllowed, Message: "spec.securityContext.privileged: not allowed in namespace ns",
				Attempts: 1, PodName: "t-a", CompletionTime: &now, ReadyStatus: metav1.ConditionFalse},
		},
		"job name taken by another owner": {
			o: observed{foreignJob: func() *batchv1.Job {
				j := makeJob().obj()
				j.Name, j.Namespace = "t", "ns"
				j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Thing", Name: "squatter", UID: "u", Controller: ptr.To(true)}}
				return j
			}()},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonNameTaken, CompletionTime: &now, ReadyStatus: metav1.ConditionFalse,
				Message: "Job t already exists and is not this task's (its controller is Thing squatter); the operator never takes it over: delete it (kubectl delete job t -n ns) and create the task again, or create it under another name"},
		},
		"job without pod": {
			o:    observed{job: makeJob().obj()},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonPending, Message: "waiting for the pod to start", ReadyStatus: metav1.ConditionFalse},
		},
		"job that cannot create its pod": {
			o: observed{job: makeJob().obj(), createFailure: `pods "t-x" is forbidden: violates PodSecurity "restricted:latest"`},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonForbidden, ReadyStatus: metav1.ConditionFalse,
				Message: `the Job cannot create its pod: pods "t-x" is forbidden: violates PodSecurity "restricted:latest"`},
		},
		"unschedulable pod says why": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).unschedulable("0/6 nodes are available: 6 node(s) didn't match Pod's node affinity.").obj()}},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonUnschedulable, ReadyStatus: metav1.ConditionFalse,
				Message: "no node can run the pod: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity."},
		},
		"unschedulable for want of its CPU scheduler says so": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).unschedulable("0/6 nodes are available: 6 node(s) didn't match Pod's node affinity.").obj()},
				noCPUScheduler: "no node runs the CPU scheduler scx_lavd (placement.cpuScheduler) and no SchedExt loads it: ask a cluster admin"},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonCPUSchedulerUnavailable, ReadyStatus: metav1.ConditionFalse,
				Message: "no node runs the CPU scheduler scx_lavd (placement.cpuScheduler) and no SchedExt loads it: ask a cluster admin"},
		},
		"a pod past scheduling keeps its own cause whatever the CPU scheduler": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).waiting("ErrImagePull", "not found").obj()},
				noCPUScheduler: "no node runs the CPU scheduler scx_lavd"},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonImagePull, ReadyStatus: metav1.ConditionFalse,
				Message: "cannot pull image nope:1: ErrImagePull: not found"},
		},
		"image pull failure": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).waiting("ErrImagePull", "not found").obj()}},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonImagePull, ReadyStatus: metav1.ConditionFalse,
				Message: "cannot pull image nope:1: ErrImagePull: not found"},
		},
		"missing secret": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).waiting("CreateContainerConfigError", `secret "db" not found`).obj()}},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonMissingRef, ReadyStatus: metav1.ConditionFalse,
				Message: `the container cannot be configured: secret "db" not found`},
		},
		"running": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).running(t1).obj()}},
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonRunning, Message: "pod t-a is running (attempt 1)",
				Attempts: 1, PodName: "t-a", ReadyStatus: metav1.ConditionTrue},
		},
		"succeeded with outputs": {
			o: observed{job: makeJob().cond(batchv1.JobComplete, "").obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(0, "sha=abc\nimage=r/x:1", t2).obj()}},
			want: want{Phase: schedv1.TaskSucceeded, Reason: schedv1.ReasonSucceeded, Message: "succeeded with 2 output(s)",
				ExitCode: ptr.To[int32](0), Attempts: 1, PodName: "t-a", Outputs: map[string]string{"sha": "abc", "image": "r/x:1"},
				CompletionTime: &t2, ReadyStatus: metav1.ConditionTrue},
		},
		"success criteria met counts as success": {
			o: observed{job: makeJob().cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached").obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(0, "", t2).obj()}},
			want: want{Phase: schedv1.TaskSucceeded, Reason: schedv1.ReasonSucceeded, Message: "succeeded",
				ExitCode: ptr.To[int32](0), Attempts: 1, PodName: "t-a", CompletionTime: &t2, ReadyStatus: metav1.ConditionTrue},
		},
		"a succeeded pod settles it before the Job does": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(0, "k=v", t2).obj()}},
			want: want{Phase: schedv1.TaskSucceeded, Reason: schedv1.ReasonSucceeded, Message: "succeeded with 1 output(s)",
				ExitCode: ptr.To[int32](0), Attempts: 1, PodName: "t-a", Outputs: map[string]string{"k": "v"},
				CompletionTime: &t2, ReadyStatus: metav1.ConditionTrue},
		},
		"the last allowed attempt failing settles it before the Job does": {
			task: MakeAgentTask("t", "ns").Image("busybox").Retries(1).Obj(),
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(3, "boom", t1).obj(), makePod("t-b", t1).exited(3, "boom", t2).obj()}},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonNonZeroExit, Message: "exited with code 3 after 2 attempt(s): boom",
				ExitCode: ptr.To[int32](3), Attempts: 2, PodName: "t-b", CompletionTime: &t2, ReadyStatus: metav1.ConditionFalse},
		},
		"a failed attempt with retries left waits for the Job controller's backoff": {
			task: MakeAgentTask("t", "ns").Image("busybox").Retries(1).Obj(),
			o:    observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(3, "boom", t1).obj()}},
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonBackingOff,
				Message:  "attempt 1 of 2 failed (exit code 3); the next starts at 10:00:11 UTC (the Job controller's wait after 1 failed pod); it said: boom",
				ExitCode: ptr.To[int32](3), Attempts: 1, PodName: "t-a", NextAttemptTime: at(t1, 10*time.Second), ReadyStatus: metav1.ConditionFalse},
		},
		"a pod killed by the Job is not a failed attempt": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{func() corev1.Pod {
				p := makePod("t-a", t0).exited(137, "killed", t1).obj()
				p.DeletionTimestamp = &t2
				return p
			}()}},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonPending, Message: "waiting for the pod to start",
				Attempts: 1, PodName: "t-a", ReadyStatus: metav1.ConditionFalse},
		},
		"a disrupted pod is not a failed attempt": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(137, "killed", t1).disrupted("PreemptionByScheduler").obj()}},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonDisrupted, PodName: "t-a", ReadyStatus: metav1.ConditionFalse,
				Message: "pod t-a was disrupted (PreemptionByScheduler: preempted by a higher-priority pod); the Job starts another, which does not count against the retry limit (disruption 1 of at most 3)"},
		},
		"the replacement of a disrupted pod is attempt 1, even in the same second": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{
				makePod("t-b", t0).exited(137, "killed", t1).disrupted("EvictionByEvictionAPI").obj(), makePod("t-a", t0).running(t1).obj()}},
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonRunning, Message: "pod t-a is running (attempt 1)",
				Attempts: 1, PodName: "t-a", ReadyStatus: metav1.ConditionTrue},
		},
		"job complete before its pod update waits": {
			o:    observed{job: makeJob().cond(batchv1.JobComplete, "").obj(), pods: []corev1.Pod{makePod("t-a", t0).running(t1).obj()}},
			want: want{Attempts: 1, PodName: "t-a"},
		},
		"malformed outputs fail the task": {
			o: observed{job: makeJob().cond(batchv1.JobComplete, "").obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(0, "just some words", t2).obj()}},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonOutputsInvalid, ExitCode: ptr.To[int32](0), Attempts: 1, PodName: "t-a",
				CompletionTime: &t2, ReadyStatus: metav1.ConditionFalse},
		},
		"non-zero exit after retries": {
			o: observed{job: makeJob().cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded).obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(3, "boom", t1).obj(), makePod("t-b", t1).exited(4, "disk full", t2).obj()}},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonNonZeroExit, Message: "exited with code 4 after 2 attempt(s): disk full",
				ExitCode: ptr.To[int32](4), Attempts: 2, PodName: "t-b", CompletionTime: &t2, ReadyStatus: metav1.ConditionFalse},
		},
		"a failed clone fails the task with its words": {
			o: observed{job: makeJob().cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded).obj(), pods: []corev1.Pod{
				makePod("t-a", t0).cloneFailed(1, "repository app: ref \"v9\" is no branch or tag\n", t1).obj()}},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonCloneFailed, Message: `cloning spec.repos failed: repository app: ref "v9" is no branch or tag`,
				Attempts: 1, PodName: "t-a", CompletionTime: &now, ReadyStatus: metav1.ConditionFalse},
		},
		"a failed clone ends the task before the Job says so": {
			o: observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).cloneFailed(137, "", t1).obj()}},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonCloneFailed, Message: "cloning spec.repos failed: exit code 137",
				Attempts: 1, PodName: "t-a", CompletionTime: &now, ReadyStatus: metav1.ConditionFalse},
		},
		"the clone's commits join the outputs": {
			o: observed{job: makeJob().cond(batchv1.JobComplete, "").obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(0, "built=yes", t2).cloned("repo.app.commit=0123456789abcdef0123456789abcdef01234567\n").obj()}},
			want: want{Phase: schedv1.TaskSucceeded, Reason: schedv1.ReasonSucceeded, Message: "succeeded with 2 output(s)", ExitCode: ptr.To[int32](0),
				Attempts: 1, PodName: "t-a", CompletionTime: &t2, ReadyStatus: metav1.ConditionTrue,
				Outputs: map[string]string{"built": "yes", "repo.app.commit": "0123456789abcdef0123456789abcdef01234567"}},
		},
		"failure target before the failed pod is seen waits": {
			o:    observed{job: makeJob().cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded).obj(), pods: []corev1.Pod{makePod("t-a", t0).running(t1).obj()}},
			want: want{Attempts: 1, PodName: "t-a"},
		},
		"deadline is a timeout": {
			o: observed{job: makeJob().cond(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded).obj(), pods: []corev1.Pod{makePod("t-a", t0).running(t1).obj()}},
			want: want{Phase: schedv1.TaskTimeout, Reason: schedv1.ReasonDeadlineExceeded, Message: "ran past spec.timeout 1m0s and was stopped",
				Attempts: 1, PodName: "t-a", CompletionTime: &now, ReadyStatus: metav1.ConditionFalse},
		},
		"a timeout ends when the Job controller says, not when an earlier attempt did": {
			task: MakeAgentTask("t", "ns").Image("busybox").Timeout(time.Minute).Retries(1).Obj(),
			o: observed{job: func() *batchv1.Job {
				j := makeJob().cond(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded).obj()
				j.Status.Conditions[0].LastTransitionTime = t2
				return j
			}(), pods: []corev1.Pod{makePod("t-a", t0).exited(3, "boom", t1).obj(), makePod("t-b", t1).running(t1).obj()}},
			want: want{Phase: schedv1.TaskTimeout, Reason: schedv1.ReasonDeadlineExceeded, Message: "ran past spec.timeout 1m0s and was stopped",
				ExitCode: ptr.To[int32](3), Attempts: 2, PodName: "t-b", CompletionTime: &t2, ReadyStatus: metav1.ConditionFalse},
		},
		"cancelled while running": {
			task: MakeAgentTask("t", "ns").Image("busybox").Cancel().Obj(),
			o:    observed{job: makeJob().suspended().obj(), pods: []corev1.Pod{makePod("t-a", t0).running(t1).obj()}},
			want: want{Phase: schedv1.TaskCancelled, Reason: schedv1.ReasonCancelled, Message: "cancelled (spec.cancel): the pod was stopped",
				Attempts: 1, PodName: "t-a", CompletionTime: &now, ReadyStatus: metav1.ConditionFalse},
		},
		"cancelled before the job existed": {
			task: MakeAgentTask("t", "ns").Image("busybox").Cancel().Obj(),
			o:    observed{},
			want: want{Phase: schedv1.TaskCancelled, Reason: schedv1.ReasonCancelled, Message: "cancelled before it started (spec.cancel)",
				CompletionTime: &now, ReadyStatus: metav1.ConditionFalse},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tk := task
			if tc.task != nil {
				tk = tc.task
			}
			st := computeStatus(tk, tc.o, now)
			got := want{Phase: st.Phase, Reason: st.Reason, Message: st.Message, ExitCode: st.ExitCode, Attempts: st.Attempts,
				PodName: st.PodName, Outputs: st.Outputs, CompletionTime: st.CompletionTime, NextAttemptTime: st.NextAttemptTime}
			if c := findCond(st.Conditions, schedv1.ConditionReady); c != nil {
				got.ReadyStatus = c.Status
				if c.Reason != st.Reason {
					t.Errorf("Ready condition reason %q, want the phase reason %q", c.Reason, st.Reason)
				}
			}
			ignoreMsg := cmpopts.IgnoreFields(want{}, "Message")
			opts := []cmp.Option{}
			if tc.want.Message == "" && tc.want.Reason == schedv1.ReasonOutputsInvalid {
				opts = append(opts, ignoreMsg)
			}
			if diff := cmp.Diff(tc.want, got, opts...); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// A finished status is final: new observations do not change it, so a
// finished task never causes a write.
func TestComputeStatusFinishedIsFinal(t *testing.T) {
	task := MakeAgentTask("t", "ns").Image("busybox").Obj()
	o := observed{job: makeJob().cond(batchv1.JobComplete, "").obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(0, "k=v", t2).obj()}}
	task.Status = computeStatus(task, o, now)
	again := computeStatus(task, observed{}, metav1.NewTime(now.Add(time.Hour)))
	if diff := cmp.Diff(task.Status, again); diff != "" {
		t.Errorf("finished status changed (-first +again):\n%s", diff)
	}
	// The same observation later gives the same status: no write.
	task2 := MakeAgentTask("t", "ns").Image("busybox").Obj()
	running := observed{job: makeJob().obj(), pods: []corev1.Pod{makePod("t-a", t0).running(t1).obj()}}
	task2.Status = computeStatus(task2, running, now)
	if diff := cmp.Diff(task2.Status, computeStatus(task2, running, metav1.NewTime(now.Add(time.Hour)))); diff != "" {
		t.Errorf("unchanged observation changed the status (-first +again):\n%s", diff)
	}
}

// at is t plus d.
func at(t metav1.Time, d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(t.Add(d))) }

// TestComputeStatusRetry: a task between a failed attempt and the next
// (retry, retries), and how its waiting ends.
func TestComputeStatusRetry(t *testing.T) {
	retry := func() *AgentTaskWrapper {
		return MakeAgentTask("t", "ns").Image("busybox").Timeout(time.Hour).Retry(3, 30*time.Second, 2, 75)
	}
	job := func() *jobWrapper { return makeJob().created(t0) }
	t40 := metav1.NewTime(t0.Add(40 * time.Second))
	t80 := metav1.NewTime(t0.Add(80 * time.Second))
	cases := map[string]struct {
		task *schedv1.AgentTask
		o    observed
		now  metav1.Time // default: t2
		want want
	}{
		"backing off after the first attempt": {
			task: retry().Obj(),
			o:    observed{job: job().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(2, "flaky", t1).obj()}},
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonBackingOff,
				Message:  "attempt 1 of 4 failed (exit code 2); the next starts at 10:00:31 UTC (backoff 30s); it said: flaky",
				ExitCode: ptr.To[int32](2), Attempts: 1, PodName: "t-a", NextAttemptTime: at(t1, 30*time.Second), ReadyStatus: metav1.ConditionFalse},
		},
		"the same while the Job is held": {
			task: retry().Obj(),
			o:    observed{job: job().suspended().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(75, "", t1).obj()}},
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonBackingOff,
				Message:  "attempt 1 of 4 failed (exit code 75); the next starts at 10:00:31 UTC (backoff 30s)",
				ExitCode: ptr.To[int32](75), Attempts: 1, PodName: "t-a", NextAttemptTime: at(t1, 30*time.Second), ReadyStatus: metav1.ConditionFalse},
		},
		"the second retry waits twice the backoff": {
			task: retry().Obj(),
			o: observed{job: job().obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(2, "", t1).obj(), makePod("t-b", t40).exited(2, "", t80).obj()}},
			now: t80,
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonBackingOff,
				Message:  "attempt 2 of 4 failed (exit code 2); the next starts at 10:02:20 UTC (backoff 30s doubled to 1m)",
				ExitCode: ptr.To[int32](2), Attempts: 2, PodName: "t-b", NextAttemptTime: at(t80, time.Minute), ReadyStatus: metav1.ConditionFalse},
		},
		"the wait is capped at 10m": {
			task: MakeAgentTask("t", "ns").Image("busybox").Retry(5, 5*time.Minute).Obj(),
			o: observed{job: job().obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(1, "", t1).obj(), makePod("t-b", t40).exited(1, "", t80).obj()}},
			now: t80,
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonBackingOff,
				Message:  "attempt 2 of 6 failed (exit code 1); the next starts at 10:11:20 UTC (backoff 5m doubled, at most 10m)",
				ExitCode: ptr.To[int32](1), Attempts: 2, PodName: "t-b", NextAttemptTime: at(t80, 10*time.Minute), ReadyStatus: metav1.ConditionFalse},
		},
		"a disruption is not counted, but the Job controller waits after it too": {
			task: MakeAgentTask("t", "ns").Image("busybox").Retry(2, 10*time.Second).Obj(),
			o: observed{job: job().obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(137, "killed", t1).disrupted("EvictionByEvictionAPI").obj(),
				makePod("t-b", t40).exited(2, "", t80).obj()}},
			now: t80,
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonBackingOff,
				Message:  "attempt 1 of 3 failed (exit code 2); the next starts at 10:01:40 UTC (the Job controller's wait after 2 failed pods)",
				ExitCode: ptr.To[int32](2), Attempts: 1, PodName: "t-b", NextAttemptTime: at(t80, 20*time.Second), ReadyStatus: metav1.ConditionFalse},
		},
		"a disrupted pod is never failed by its exit code": {
			task: retry().Obj(),
			o:    observed{job: job().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(137, "killed", t1).disrupted("DeletionByTaintManager").obj()}},
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonDisrupted, PodName: "t-a", ReadyStatus: metav1.ConditionFalse,
				Message: "pod t-a was disrupted (DeletionByTaintManager: preempted by a higher-priority pod); the Job starts another, which does not count against the retry limit (disruption 1 of at most 3)"},
		},
		"a pod the Job controller made and deleted when the Job was held is no attempt": {
			task: retry().Obj(),
			o: observed{job: job().suspended().obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(2, "", t1).obj(), makePod("t-b", t40).exited(137, "killed", t40).deleted(t40).obj()}},
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonBackingOff,
				Message:  "attempt 1 of 4 failed (exit code 2); the next starts at 10:00:31 UTC (backoff 30s)",
				ExitCode: ptr.To[int32](2), Attempts: 2, PodName: "t-b", NextAttemptTime: at(t1, 30*time.Second), ReadyStatus: metav1.ConditionFalse},
		},
		"a pod the Job controller deletes at its deadline is the latest attempt, not a reason to back off": {
			task: retry().Obj(),
			o: observed{job: job().obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(2, "", t1).obj(), makePod("t-b", t40).exited(137, "killed", t80).deleted(t80).obj()}},
			now: t80,
			want: want{Phase: schedv1.TaskPending, Reason: schedv1.ReasonPending, Message: "waiting for the pod to start",
				ExitCode: nil, Attempts: 2, PodName: "t-b", ReadyStatus: metav1.ConditionFalse},
		},
		"the next attempt runs": {
			task: retry().Obj(),
			o: observed{job: job().obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(2, "", t1).obj(), makePod("t-b", t40).running(t40).obj()}},
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonRunning, Message: "pod t-b is running (attempt 2 of 4)",
				Attempts: 2, PodName: "t-b", ReadyStatus: metav1.ConditionTrue},
		},
		"the limit used up fails it": {
			task: MakeAgentTask("t", "ns").Image("busybox").Retry(1, 10*time.Second).Obj(),
			o: observed{job: job().obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(2, "", t1).obj(), makePod("t-b", t40).exited(2, "still flaky", t80).obj()}},
			now: t80,
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonNonZeroExit, Message: "exited with code 2 after 2 attempt(s): still flaky",
				ExitCode: ptr.To[int32](2), Attempts: 2, PodName: "t-b", CompletionTime: &t80, ReadyStatus: metav1.ConditionFalse},
		},
		"an exit code not in onExitCodes fails it at once": {
			task: retry().Obj(),
			o:    observed{job: job().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(1, "bad input", t1).obj()}},
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonNonZeroExit,
				Message:  "exit code 1 is not in retry.onExitCodes [2 75]: not retried (attempt 1 of 4): bad input",
				ExitCode: ptr.To[int32](1), Attempts: 1, PodName: "t-a", CompletionTime: &t1, ReadyStatus: metav1.ConditionFalse},
		},
		"and so when the Job's podFailurePolicy says it first": {
			task: retry().Obj(),
			o: observed{job: job().cond(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy).obj(), pods: []corev1.Pod{
				makePod("t-a", t0).exited(2, "", t1).obj(), makePod("t-b", t40).exited(9, "", t80).obj()}},
			now: t80,
			want: want{Phase: schedv1.TaskFailed, Reason: schedv1.ReasonNonZeroExit,
				Message:  "exit code 9 is not in retry.onExitCodes [2 75]: not retried (attempt 2 of 4)",
				ExitCode: ptr.To[int32](9), Attempts: 2, PodName: "t-b", CompletionTime: &t80, ReadyStatus: metav1.ConditionFalse},
		},
		"a backoff past the timeout says so": {
			task: MakeAgentTask("t", "ns").Image("busybox").Timeout(time.Minute).Retry(1, time.Minute).Obj(),
			o:    observed{job: job().suspended().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(2, "", t1).obj()}},
			want: want{Phase: schedv1.TaskRunning, Reason: schedv1.ReasonBackingOff,
				Message:  "attempt 1 of 2 failed (exit code 2); the next would start at 10:01:01 UTC (backoff 1m), past spec.timeout at 10:01:00 UTC",
				ExitCode: ptr.To[int32](2), Attempts: 1, PodName: "t-a", NextAttemptTime: at(t1, time.Minute), ReadyStatus: metav1.ConditionFalse},
		},
		"the timeout during a backoff ends it": {
			task: MakeAgentTask("t", "ns").Image("busybox").Timeout(time.Minute).Retry(1, time.Minute).Obj(),
			o:    observed{job: job().suspended().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(2, "", t1).obj()}},
			now:  metav1.NewTime(t0.Add(time.Minute)),
			want: want{Phase: schedv1.TaskTimeout, Reason: schedv1.ReasonDeadlineExceeded,
				Message:  "ran past spec.timeout 1m0s while it waited to retry: attempt 1 of 2 failed (exit code 2)",
				ExitCode: ptr.To[int32](2), Attempts: 1, PodName: "t-a", CompletionTime: at(t0, time.Minute), ReadyStatus: metav1.ConditionFalse},
		},
		"a cancel during a backoff ends it Cancelled": {
			task: retry().Cancel().Obj(),
			o:    observed{job: job().suspended().obj(), pods: []corev1.Pod{makePod("t-a", t0).exited(2, "", t1).obj()}},
			want: want{Phase: schedv1.TaskCancelled, Reason: schedv1.ReasonCancelled, Message: "cancelled (spec.cancel) while it waited to retry: attempt 1 of 4 failed (exit code 2)",
				ExitCode: ptr.To[int32](2), Attempts: 1, PodName: "t-a", CompletionTime: &t2, ReadyStatus: metav1.ConditionFalse},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := tc.now
			if n.IsZero() {
				n = t2
			}
			st := computeStatus(tc.task, tc.o, n)
			got := want{Phase: st.Phase, Reason: st.Reason, Message: st.Message, ExitCode: st.ExitCode, Attempts: st.Attempts,
				PodName: st.PodName, Outputs: st.Outputs, CompletionTime: st.CompletionTime, NextAttemptTime: st.NextAttemptTime}
			if c := findCond(st.Conditions, schedv1.ConditionReady); c != nil {
				got.ReadyStatus = c.Status
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			// Computed again later, a waiting task's status is the same: no write.
			if st.Reason == schedv1.ReasonBackingOff {
				tk := tc.task.DeepCopy()
				tk.Status = st
				if diff := cmp.Diff(st, computeStatus(tk, tc.o, metav1.NewTime(n.Add(time.Second)))); diff != "" {
					t.Errorf("recomputed a second later (-first +again):\n%s", diff)
				}
			}
		})
	}
}

// TestComputeStatusPrunes: the status names the pods that may go (all but
// the latest and the latest failed attempt before it), with what they counted, and
// counts them on once they are gone: attempts, the retry limit, the
// backoff's doubling and disruptions go on as if the pods were there.
// Computed again, with the pruned pods still there or gone, it is the
// same: a restart between the status write and the deletes changes
// nothing.
func TestComputeStatusPrunes(t *testing.T) {
	job := func() *jobWrapper { return makeJob().created(t0) }
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	failed := func(name string, s int) corev1.Pod { return makePod(name, at(s)).exited(2, "", at(s+1)).obj() }
	evicted := func(name string, s int) corev1.Pod {
		return makePod(name, at(s)).exited(137, "", at(s+1)).disrupted("TerminationByKubelet").obj()
	}
	cases := map[string]struct {
		task *schedv1.AgentTask
		pods []corev1.Pod
		now  metav1.Time
		// pruned as the status names them; attempts, disruptions and
		// reason as it says.
		pruned      *schedv1.PrunedPods
		attempts    int32
		disruptions int32
		reason      string
		message     string
		// unkept are the pods whose logs the status does not keep yet;
		// every other pod's is.
		unkept []string
	}{
		"one failed attempt: nothing to prune": {
			task:     MakeAgentTask("t", "ns").Image("busybox").Retry(3, 10*time.Second).Obj(),
			pods:     []corev1.Pod{failed("t-a", 0)},
			now:      at(5),
			attempts: 1, reason: schedv1.ReasonBackingOff,
		},
		"the third attempt runs: the first goes, the latest failure stays": {
			task:     MakeAgentTask("t", "ns").Image("busybox").Retry(3, 10*time.Second).Obj(),
			pods:     []corev1.Pod{failed("t-a", 0), failed("t-b", 20), makePod("t-c", at(60)).running(at(61)).obj()},
			now:      at(62),
			pruned:   &schedv1.PrunedPods{Pods: []string{"t-a"}, Attempts: 1, Failed: 1},
			attempts: 3, reason: schedv1.ReasonRunning,
		},
		"backing off after the third: the first goes, the doubling counts it": {
			task:     MakeAgentTask("t", "ns").Image("busybox").Retry(3, 10*time.Second).Obj(),
			pods:     []corev1.Pod{failed("t-a", 0), failed("t-b", 20), failed("t-c", 60)},
			now:      at(62),
			pruned:   &schedv1.PrunedPods{Pods: []string{"t-a"}, Attempts: 1, Failed: 1},
			attempts: 3, reason: schedv1.ReasonBackingOff,
			message: "attempt 3 of 4 failed (exit code 2); the next starts at 10:01:41 UTC (backoff 10s doubled to 40s)",
		},
		"the limit used up, with a pruned attempt, fails it": {
			task:     MakeAgentTask("t", "ns").Image("busybox").Retry(2, 10*time.Second).Obj(),
			pods:     []corev1.Pod{failed("t-a", 0), failed("t-b", 20), failed("t-c", 60)},
			now:      at(62),
			pruned:   &schedv1.PrunedPods{Pods: []string{"t-a"}, Attempts: 1, Failed: 1},
			attempts: 3, reason: schedv1.ReasonNonZeroExit,
		},
		"disrupted pods go too, and count": {
			task:     MakeAgentTask("t", "ns").Image("busybox").Retry(3, 10*time.Second).Obj(),
			pods:     []corev1.Pod{failed("t-a", 0), evicted("t-b", 20), makePod("t-c", at(60)).running(at(61)).obj()},
			now:      at(62),
			pruned:   &schedv1.PrunedPods{Pods: []string{"t-b"}, Disrupted: 1},
			attempts: 2, disruptions: 1, reason: schedv1.ReasonRunning,
		},
		"the third disruption is replaced": {
			task:        MakeAgentTask("t", "ns").Image("busybox").Obj(),
			pods:        []corev1.Pod{evicted("t-a", 0), evicted("t-b", 20), evicted("t-c", 40)},
			now:         at(45),
			pruned:      &schedv1.PrunedPods{Pods: []string{"t-a", "t-b"}, Disrupted: 2},
			disruptions: 3, reason: schedv1.ReasonDisrupted,
		},
		"the fourth fails the task": {
			task:        MakeAgentTask("t", "ns").Image("busybox").Obj(),
			pods:        []corev1.Pod{evicted("t-a", 0), evicted("t-b", 20), evicted("t-c", 40), evicted("t-d", 60)},
			now:         at(65),
			pruned:      &schedv1.PrunedPods{Pods: []string{"t-a", "t-b", "t-c"}, Disrupted: 3},
			disruptions: 4, reason: schedv1.ReasonTooManyDisruptions,
			message: "4 of its pods were disrupted (preempted, evicted or drained), more than the 3 a task is replaced after without using a retry; its Job was stopped; " +
				"the latest, pod t-d: TerminationByKubelet: preempted by a higher-priority pod. A container evicted for its ephemeral storage wrote more to its disk than " +
				"resources.limits.ephemeral-storage (its tier's default when unset): raise the limit or write less, and create the task again",
		},
		"the third attempt runs, the first's log not kept yet: it stays": {
			task:     MakeAgentTask("t", "ns").Image("busybox").Retry(3, 10*time.Second).Obj(),
			pods:     []corev1.Pod{failed("t-a", 0), failed("t-b", 20), makePod("t-c", at(60)).running(at(61)).obj()},
			unkept:   []string{"t-a"},
			now:      at(62),
			attempts: 3, reason: schedv1.ReasonRunning,
		},
		"succeeded after two failures: the first goes": {
			task:     MakeAgentTask("t", "ns").Image("busybox").Retry(3, 10*time.Second).Obj(),
			pods:     []corev1.Pod{failed("t-a", 0), failed("t-b", 20), makePod("t-c", at(60)).exited(0, "k=v", at(61)).obj()},
			now:      at(62),
			pruned:   &schedv1.PrunedPods{Pods: []string{"t-a"}, Attempts: 1, Failed: 1},
			attempts: 3, reason: schedv1.ReasonSucceeded,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := observed{job: job().obj(), pods: tc.pods}
			for _, p := range tc.pods {
				if !slices.Contains(tc.unkept, p.Name) {
					tc.task.Status.Logs = append(tc.task.Status.Logs, schedv1.KeptLog{Pod: p.Name, Reason: schedv1.LogKept})
				}
			}
			st := computeStatus(tc.task, o, tc.now)
			if diff := cmp.Diff(tc.pruned, st.Pruned); diff != "" {
				t.Errorf("pruned (-want +got):\n%s", diff)
			}
			if st.Attempts != tc.attempts || st.Disruptions != tc.disruptions || st.Reason != tc.reason {
				t.Errorf("attempts %d, disruptions %d, reason %s (%s); want %d, %d, %s", st.Attempts, st.Disruptions, st.Reason, st.Message, tc.attempts, tc.disruptions, tc.reason)
			}
			if tc.message != "" && st.Message != tc.message {
				t.Errorf("message:\n%s\nwant:\n%s", st.Message, tc.message)
			}
			if st.Phase.Finished() {
				return
			}
			// Again, with the pruned pods still there, then gone: the same.
			again := tc.task.DeepCopy()
			again.Status = st
			if diff := cmp.Diff(st, computeStatus(again, o, tc.now)); diff != "" {
				t.Errorf("recomputed with the pruned pods there (-first +again):\n%s", diff)
			}
			gone := observed{job: o.job, pods: unpruned(o.pods, st.Pruned)}
			if diff := cmp.Diff(st, computeStatus(again, gone, tc.now)); diff != "" {
				t.Errorf("recomputed with the pruned pods gone (-first +again):\n%s", diff)
			}
		})
	}
}

// TestPlanHold: when the operator holds a task's Job for a backoff, resumes
// it, or leaves it alone.
func TestPlanHold(t *testing.T) {
	spec := MakeAgentTask("t", "ns").Image("busybox").Timeout(time.Minute).Retry(2, 20*time.Second).Obj().Spec
	failedAt := t1.Add(0)
	resumeAt := failedAt.Add(20 * time.Second)
	failed := []corev1.Pod{makePod("t-a", t0).exited(3, "", t1).obj()}
	job := func() *jobWrapper { return makeJob().created(t0) }
	cases := map[string]struct {
		spec *schedv1.AgentTaskSpec
		job  *batchv1.Job
		pods []corev1.Pod
		now  time.Time
		want jobHold
	}{
		"a failed attempt: hold the Job until the backoff ends": {
			job: job().obj(), pods: failed, now: failedAt.Add(time.Second),
			want: jobHold{suspend: true, wake: resumeAt},
		},
		"held already: wait": {
			job: job().suspended().obj(), pods: failed, now: failedAt.Add(time.Second),
			want: jobHold{wake: resumeAt},
		},
		"the backoff over: resume with what is left of the timeout": {
			job: job().suspended().obj(), pods: failed, now: resumeAt.Add(500 * time.Millisecond),
			// 38.5s left, rounded up.
			want: jobHold{resume: true, activeDeadline: ptr.To[int64](39)},
		},
		"without a timeout, no deadline": {
			spec: MakeAgentTask("t", "ns").Image("busybox").Retry(2, 20*time.Second).Obj().Spec.DeepCopy(),
			job:  job().suspended().obj(), pods: failed, now: resumeAt,
			want: jobHold{resume: true},
		},
		"less than a second left: no resume, the timeout ends it": {
			job: job().suspended().obj(), pods: failed, now: t0.Add(time.Minute - 500*time.Millisecond),
			want: jobHold{wake: t0.Add(time.Minute)},
		},
		"a timeout before the backoff ends wakes it first": {
			spec: MakeAgentTask("t", "ns").Image("busybox").Timeout(10*time.Second).Retry(2, 20*time.Second).Obj().Spec.DeepCopy(),
			job:  job().obj(), pods: failed, now: failedAt.Add(time.Second),
			want: jobHold{suspend: true, wake: t0.Add(10 * time.Second)},
		},
		"resumed already: never held again for the same attempt": {
			job: job().obj(), pods: failed, now: resumeAt.Add(time.Second),
			want: jobHold{},
		},
		"the next attempt started: nothing to hold": {
			job: job().obj(), pods: append(failed, makePod("t-b", t2).running(t2).obj()), now: failedAt.Add(time.Second),
			want: jobHold{},
		},
		"a second failure: held again, twice as long": {
			spec: MakeAgentTask("t", "ns").Image("busybox").Timeout(time.Hour).Retry(2, 20*time.Second).Obj().Spec.DeepCopy(),
			job:  job().obj(), pods: append(failed, makePod("t-b", metav1.NewTime(resumeAt)).exited(3, "", metav1.NewTime(resumeAt.Add(time.Second))).obj()),
			now:  resumeAt.Add(2 * time.Second),
			want: jobHold{suspend: true, wake: resumeAt.Add(41 * time.Second)},
		},
		"no backoff asked (retries): the Job controller's own wait, no hold": {
			spec: MakeAgentTask("t", "ns").Image("busybox").Retries(2).Obj().Spec.DeepCopy(),
			job:  job().obj(), pods: failed, now: failedAt.Add(time.Second),
			want: jobHold{},
		},
		"cancelled: the cancel's suspension is not a hold": {
			spec: MakeAgentTask("t", "ns").Image("busybox").Retry(2, 20*time.Second).Cancel().Obj().Spec.DeepCopy(),
			job:  job().suspended().obj(), pods: failed, now: resumeAt.Add(time.Second),
			want: jobHold{},
		},
		"an exit code not worth a retry: no hold": {
			spec: MakeAgentTask("t", "ns").Image("busybox").Retry(2, 20*time.Second, 4).Obj().Spec.DeepCopy(),
			job:  job().obj(), pods: failed, now: failedAt.Add(time.Second),
			want: jobHold{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &spec
			if tc.spec != nil {
				s = tc.spec
			}
			got := planHold(s, tc.job, sortedPods(tc.pods), prior{}, tc.now)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(jobHold{})); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func findCond(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}
