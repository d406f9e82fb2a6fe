package v1alpha1

// Condition types. Every kind reports Ready; long-running kinds also report
// Progressing and Degraded, in the style of Deployments.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
	// ConditionSucceeded is set on AgentTasks and Workflows when they end:
	// True on success, False with the reason on failure.
	ConditionSucceeded = "Succeeded"
	// ConditionPriorityMapped is set when placement.priority is: True when
	// the operator maps it to a PriorityClass, False when the pods run at the
	// cluster's default priority because it maps to none.
	ConditionPriorityMapped = "PriorityMapped"
	// ConditionCertificateReady is set on a public app whose certificate the
	// operator requests from cert-manager: True once it is issued.
	ConditionCertificateReady = "CertificateReady"
	// ConditionSuspended is set on a Workflow once spec.suspend was set:
	// True while it holds the start of new steps, False once resumed.
	ConditionSuspended = "Suspended"
	// ConditionRolledBack is set on an app with spec.rollback: OnDegraded
	// while its services run an earlier revision than the spec's, which
	// did not become Running within spec.progressDeadline: True, reason
	// RolledBack, the message saying which revisions and why. It is
	// removed when the spec changes, or spec.rollback is Never again.
	ConditionRolledBack = "RolledBack"
	// ConditionPodDeleted is set on a succeeded AgentTask once the
	// operator deleted its pods, its outputs safe in the status: True,
	// reason SucceededPodRetention, the message naming the pod and the
	// retention, lastTransitionTime when. Failed and timed-out tasks keep
	// their pods, and so their logs, as long as the task.
	ConditionPodDeleted = "PodDeleted"
)

// Reasons for conditions and events. They are part of the API: scripts and
// alerts match on them, so they are named here and nowhere else.
const (
	ReasonReconciling   = "Reconciling"
	ReasonAvailable     = "Available"
	ReasonStopped       = "Stopped"
	ReasonInvalidSpec   = "InvalidSpec"
	ReasonUnschedulable = "Unschedulable"
	ReasonImagePull     = "ImagePullFailed"
	ReasonCrashLoop     = "CrashLoopBackOff"
	ReasonMissingRef    = "MissingReference"
	ReasonForbidden     = "Forbidden"
	ReasonCreateFailed  = "CreateFailed"
	// ReasonHostConflict: an app in another namespace claimed the ingress
	// host first, or an Ingress or IngressRoute of another namespace serves
	// it, so this app gets no route for it.
	ReasonHostConflict = "HostConflict"
	// ReasonHostNotAllowed: the app's ingress host is not one its namespace
	// may route (another namespace's part of the ingress domain, the bare
	// domain, a wildcard, or a host outside the domain that the namespace's
	// allow-list lacks), so it gets no route.
	ReasonHostNotAllowed = "HostNotAllowed"
	// ReasonIngressClassNotAllowed: spec.ingress.className is neither the
	// operator's class nor one the admin allowed, so the app gets no route.
	ReasonIngressClassNotAllowed = "IngressClassNotAllowed"
	// ReasonRejected: the API server refused an object the operator
	// creates (invalid, too large, or denied by admission); only a new
	// spec can fix it, so the owner fails instead of retrying.
	ReasonRejected = "Rejected"
	// ReasonQuotaExceeded: a full ResourceQuota refused an object; the
	// owner waits, retrying with backoff, until usage drops.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonPrivilegedNotAllowed: the spec asks for what Pod Security
	// "restricted" refuses (a privileged container, an unconfined profile,
	// a probe aimed at another host) in a namespace that is not opted out
	// with LabelAllowPrivilegedPods, typically because an admin removed the
	// label: a task fails and its Job is deleted, an app's service runs no
	// pods and a restricted template.
	ReasonPrivilegedNotAllowed = "PrivilegedNotAllowed"
	// ReasonAnnotationNotAllowed: podMetadata.annotations holds a key of
	// a domain the operator's --allowed-pod-annotation-domains does not
	// list (admitted before the setting, or where its admission policy is
	// missing): a task fails and its Job is deleted, an app's service runs
	// no pods, as for ReasonPrivilegedNotAllowed.
	ReasonAnnotationNotAllowed = "AnnotationNotAllowed"

	// ReasonNameTaken: the object the operator would create for a task
	// or step (its Job, a step's AgentTask) already exists and belongs to
	// something else (checked by UID); it is never taken over, so the task
	// or step fails until that object is deleted or renamed.
	ReasonNameTaken = "NameTaken"

	// ReasonCPUSchedulerUnavailable: a task's or app's pod cannot be
	// scheduled because no node it may run on has the sched_ext
	// scheduler placement.cpuScheduler asks for attached; the message
	// names the scheduler and the SchedExts that load it, or says that
	// none does. Like Unschedulable it may clear by itself (a loader
	// attaching), so an app waits it out until its progress deadline.
	ReasonCPUSchedulerUnavailable = "CPUSchedulerUnavailable"
	// ReasonCPUSchedulerDetached: the event of an app pod evicted from a
	// node where its placement.cpuScheduler no longer runs, so that it is
	// rescheduled where it does.
	ReasonCPUSchedulerDetached = "CPUSchedulerDetached"

	// AgentTask and Workflow.
	ReasonPending          = "Pending"
	ReasonRunning          = "Running"
	ReasonSucceeded        = "Succeeded"
	ReasonFailed           = "Failed"
	ReasonNonZeroExit      = "NonZeroExit"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonCancelled        = "Cancelled"
	// ReasonDisrupted: the task's pod was preempted, evicted or drained
	// (its DisruptionTarget condition); the Job starts another, which does
	// not count against the retry limit.
	ReasonDisrupted = "Disrupted"
	// ReasonTooManyDisruptions: more than MaxDisruptions of the task's
	// pods were disrupted; the task failed and its Job was stopped rather
	// than replace the pod again.
	ReasonTooManyDisruptions = "TooManyDisruptions"
	// ReasonBackingOff: an attempt of the task failed and a retry is left;
	// the task waits until status.nextAttemptTime (spec.retry.backoff, or
	// the Job controller's own wait) before the next starts. Its phase
	// stays Running.
	ReasonBackingOff       = "BackingOff"
	ReasonOutputsInvalid   = "OutputsInvalid"
	ReasonOutputsTruncated = "OutputsTruncated"
	ReasonMissingOutput    = "MissingOutput"
	// ReasonCloneFailed: the init container that clones spec.repos
	// failed (a url it cannot reach, a ref that is not there, refused
	// credentials); the message holds its error.
	ReasonCloneFailed = "CloneFailed"
	// ReasonTooLarge: a workflow step renders past the size an AgentTask
	// holds once its references are substituted, its task is not built; or
	// a forEach step's gathered outputs pass MaxLoopOutputBytes.
	ReasonTooLarge = "TooLarge"
	// ReasonInvalidItems: a forEach step's list, read from the output or
	// param its forEach.from names, is not a JSON array of strings, or
	// holds more than MaxItems items.
	ReasonInvalidItems = "InvalidItems"
	ReasonStepFailed   = "StepFailed"
	// Workflow events for a step's end: Step<Phase>.
	ReasonStepSucceeded = "StepSucceeded"
	ReasonStepTimeout   = "StepTimeout"
	ReasonStepSkipped   = "StepSkipped"
	ReasonStepCancelled = "StepCancelled"
	// ReasonStepWaitingForApproval: the event of an approval step that
	// starts waiting for a decision.
	ReasonStepWaitingForApproval = "StepWaitingForApproval"

	// ReasonWhenFalse: a step's when expression was false, so the step
	// was skipped (and the steps that depend on it).
	ReasonWhenFalse = "WhenFalse"
	// ReasonWhenError: a step's when expression failed to evaluate (a
	// missing key, its cost limit), so the step failed.
	ReasonWhenError = "WhenError"
	// ReasonWaitingForApproval: an approval step waits for 'kubectl sched
	// workflow approve' or 'deny'; on the workflow, nothing else runs.
	ReasonWaitingForApproval = "WaitingForApproval"
	// ReasonApproved and ReasonDenied: the decision recorded in
	// spec.approvals; a denied step Fails and so does its workflow.
	ReasonApproved = "Approved"
	ReasonDenied   = "Denied"
	// ReasonSelfApproved: the approval recorded is by the user who asked
	// for the run, which the cluster forbids (forbid-self-approval); the
	// step Fails, as a denied one does.
	ReasonSelfApproved = "SelfApproved"
	// ReasonApprovalNotReused: a retry's approval step that Succeeded in
	// the earlier attempt asks again, because what its approval let run
	// changed (or the approver asked for this run, where that is
	// forbidden); its message says why.
	ReasonApprovalNotReused = "ApprovalNotReused"
	// ReasonSuspended: spec.suspend holds the start of new steps (the
	// Suspended condition, and the workflow's reason while nothing runs),
	// or a CronWorkflow's new runs (its Ready reason).
	ReasonSuspended = "Suspended"
	// ReasonResumed: spec.suspend was set and is no longer.
	ReasonResumed = "Resumed"
	// ReasonTemplateNotFound: a Workflow's workflowTemplateRef names a
	// template that does not exist (yet); the run waits, Pending.
	ReasonTemplateNotFound = "TemplateNotFound"
	// ReasonInvalidParams: a Workflow from a template sets a param the
	// template does not declare; the run fails.
	ReasonInvalidParams = "InvalidParams"
	// ReasonTemplateResolved is the Event of a run taking its template's
	// steps.
	ReasonTemplateResolved = "TemplateResolved"
	// ReasonRunningFinally: the main steps have ended and the finally
	// steps run.
	ReasonRunningFinally = "RunningFinally"
	// ReasonFinallyFailed: every main step succeeded but a finally step
	// did not, so the workflow Failed.
	ReasonFinallyFailed = "FinallyFailed"

	// ReasonExpired: the event of a finished task or workflow that its
	// TTL (status.expiry) deleted.
	ReasonExpired = "Expired"
	// ReasonSucceededPodRetention: a succeeded task's pods were deleted
	// once the cluster's --succeeded-pod-retention had passed since it
	// finished (the PodDeleted condition).
	ReasonSucceededPodRetention = "SucceededPodRetention"
	// Tenant namespace events: the operator asked the cluster's quota
	// controller to count what the tier's ResourceQuota limits
	// (QuotaRecount), or it still has not after minutes (QuotaNotCounted).
	ReasonQuotaRecount    = "QuotaRecount"
	ReasonQuotaNotCounted = "QuotaNotCounted"
	// ReasonTiersMissing: no tiers ConfigMap in the operator's namespace,
	// so a tenant namespace's tier cannot be applied.
	ReasonTiersMissing = "TiersMissing"
	// ReasonUnknownTier: a namespace names a tier the tiers ConfigMap does
	// not define, or defines so that it does not parse.
	ReasonUnknownTier = "UnknownTier"

	// CronWorkflow. Ready is True with ReasonScheduled while runs start on
	// schedule, False with ReasonSuspended, ReasonInvalidSchedule,
	// ReasonUnknownTimeZone, or the reason a run could not be created
	// (ReasonRejected, ReasonQuotaExceeded, ReasonNameTaken,
	// ReasonCreateFailed). Events: ReasonCreated and ReasonDeleted for its
	// runs, ReasonRunSkipped (Forbid), ReasonRunReplaced (Replace),
	// ReasonMissedSchedule (too late for startingDeadlineSeconds, or too
	// many missed to count).
	ReasonScheduled       = "Scheduled"
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonUnknownTimeZone = "UnknownTimeZone"
	ReasonRunSkipped      = "RunSkipped"
	ReasonRunReplaced     = "RunReplaced"
	ReasonMissedSchedule  = "MissedSchedule"

	// PriorityMapped.
	ReasonPriorityMapped   = "PriorityClassMapped"
	ReasonPriorityUnmapped = "PriorityUnmapped"

	// CertificateReady.
	ReasonCertificateIssued       = "CertificateIssued"
	ReasonCertificatePending      = "CertificatePending"
	ReasonCertificateNotRequested = "CertificateNotRequested"

	// UserDeployment.
	ReasonExternalSecretsUnavailable = "ExternalSecretsUnavailable"
	// ReasonProgressDeadline: a service made no progress for the app's
	// spec.progressDeadline (or its Deployment says its
	// progressDeadlineSeconds passed); the message names what it waited
	// for.
	ReasonProgressDeadline = "ProgressDeadlineExceeded"
	// ReasonContainersStarting: a scheduled pod's containers are being
	// created (images pulled, volumes mounted) or initialised; it keeps an
	// app Progressing until its progress deadline.
	ReasonContainersStarting = "ContainersStarting"
	// ReasonRolledBack: the app's revision did not become Running within
	// spec.progressDeadline, so the operator runs the last revision that
	// did (spec.rollback: OnDegraded). The Warning event when it rolls
	// back, the RolledBack condition while it does, and the Ready
	// condition's reason while the revision rolled back to runs.
	ReasonRolledBack = "RolledBack"
	// Events about the objects an app is made of.
	ReasonCreated  = "Created"
	ReasonRepaired = "Repaired"
	ReasonDeleted  = "Deleted"

	// SchedExt.
	ReasonSchedulerConflict = "SchedulerConflict"
	ReasonNotAttached       = "NotAttached"
	ReasonUnsupportedKernel = "UnsupportedKernel"
	ReasonNoNodes           = "NoMatchingNodes"
	ReasonUnknownScheduler  = "UnknownScheduler"
	// ReasonImageNotAllowed: spec.scheduler.image is not from a registry
	// the operator's --allowed-scheduler-registries lists.
	ReasonImageNotAllowed = "ImageNotAllowed"
	// ReasonSchedulerNamespaceMissing: the namespace of the SchedExt
	// DaemonSets does not exist (kubectl sched install creates it).
	ReasonSchedulerNamespaceMissing = "SchedulerNamespaceMissing"
	ReasonAttached                  = "Attached"
	// ReasonRolledOut: Progressing is False because the DaemonSet runs the
	// current template everywhere it should.
	ReasonRolledOut = "RolledOut"
	// ReasonAsExpected: Degraded is False.
	ReasonAsExpected = "AsExpected"
)
