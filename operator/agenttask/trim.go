package agenttask

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// TrimJob is the cache transform for the tasks' Jobs. The controller reads
// a Job's identity, labels and owner (whose task it is), whether it is
// suspended (a cancelled task), and its status; it never writes one from
// the cache but by a patch of spec.suspend. The pod template, a copy of
// the task's spec and most of a Job's size, and the managed fields are
// dropped.
func TrimJob(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	return &batchv1.Job{
		ObjectMeta: identity(job.ObjectMeta),
		Spec:       batchv1.JobSpec{Suspend: job.Spec.Suspend},
		Status:     job.Status,
	}, nil
}

// TrimEvent is the cache transform for the Job controller's FailedCreate
// events: the controller reads which object an event is about, its reason,
// message and when it last happened.
func TrimEvent(obj any) (any, error) {
	ev, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: ev.Name, Namespace: ev.Namespace, UID: ev.UID, ResourceVersion: ev.ResourceVersion},
		InvolvedObject: corev1.ObjectReference{
			Kind: ev.InvolvedObject.Kind, Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name, UID: ev.InvolvedObject.UID,
		},
		Reason:        ev.Reason,
		Message:       ev.Message,
		LastTimestamp: ev.LastTimestamp,
		EventTime:     ev.EventTime,
	}, nil
}

func identity(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		Labels: m.Labels, OwnerReferences: m.OwnerReferences,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
}

// AnnotationTrimmed marks an object in the cache whose spec lacks what
// its controller reads past the cache (TrimTask, and the Workflow and
// CronWorkflow transforms). It is never written to the API server.
const AnnotationTrimmed = schedv1.GroupName + "/cache-trimmed"

// TrimAbove is how much of a spec the cache keeps whole: a spec whose
// bulk (its strings a tenant sizes: a task's command, args, env and pod
// metadata; a workflow's too, with its params, forEach items and whens)
// is larger is trimmed. Nearly every spec is far smaller, and is cached
// as before; a large one costs a read past the cache when its controller
// needs what was dropped.
const TrimAbove = 16 << 10

// TrimTask is the cache transform for AgentTasks. Its status's kept logs
// lose their text (trimLogs). A task's spec holds up
// to 0.95 MiB, nearly all of it its command, args, env and pod metadata,
// which only its Job reads: past TrimAbove, the cache keeps the rest of
// the spec (and of the pod's annotations those that loosen Pod Security,
// which privilegeAsked reads), marked AnnotationTrimmed, and the
// controller reads the task whole, past the cache, in the one place it
// builds a Job (Reconciler.createJob). The metadata is trimmed as TrimMeta
// does. No controller writes a task from the cache but by patches of what
// it changed, so what was dropped is never written back.
func TrimTask(obj any) (any, error) {
	task, ok := obj.(*schedv1.AgentTask)
	if !ok {
		return obj, nil
	}
	TrimMeta(&task.ObjectMeta)
	trimLogs(task.Status.Logs)
	// File outputs (up to 1 MiB a task) are cached only when they are as
	// small as a termination message's: those the Workflow controller
	// passes on to later steps (schedv1.PassedFileOutputs). The status
	// write that adds them finishes the task, computed before they were
	// cached, and no later write touches them.
	if !schedv1.PassedFileOutputs(task.Status.FileOutputs) {
		task.Status.FileOutputs = nil
	}
	if TaskBulk(&task.Spec) <= TrimAbove {
		return task, nil
	}
	s := &task.Spec
	s.Command, s.Args, s.Env = nil, nil, nil
	if pm := s.PodMetadata; pm != nil {
		kept := map[string]string{}
		for k, v := range pm.Annotations {
			if podsecurity.LoosensPodSecurity(k, v) {
				kept[k] = v
			}
		}
		s.PodMetadata = &schedv1.PodMetadata{Annotations: kept}
	}
	MarkTrimmed(&task.ObjectMeta)
	return task, nil
}

// trimLogs drops the text of a cached task's kept logs (up to
// KeptLogTaskBytes a task), keeping which pods' logs are kept and how: no
// controller reads the text, and the status write that adds a log is
// computed from the task read whole (readLogs), so the merge patch of any
// other write leaves status.logs as it is.
func trimLogs(logs []schedv1.KeptLog) {
	for i := range logs {
		logs[i].Log, logs[i].Message = "", ""
	}
}

// TaskBulk is the size of the strings of s a tenant sizes most: its
// command, args, env and pod metadata, in bytes.
func TaskBulk(s *schedv1.AgentTaskSpec) int {
	n := 0
	for _, l := range [][]string{s.Command, s.Args} {
		for _, v := range l {
			n += len(v)
		}
	}
	for _, e := range s.Env {
		n += len(e.Name) + len(e.Value)
		if f := e.ValueFrom; f != nil {
			n += 1024 // a reference: names, keys and a path, bounded
		}
	}
	if pm := s.PodMetadata; pm != nil {
		for _, m := range []map[string]string{pm.Labels, pm.Annotations} {
			for k, v := range m {
				n += len(k) + len(v)
			}
		}
	}
	return n
}

// MarkTrimmed marks a cached object trimmed (AnnotationTrimmed).
func MarkTrimmed(m *metav1.ObjectMeta) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[AnnotationTrimmed] = "true"
}

// Trimmed reports whether an object is a cached copy its transform
// trimmed.
func Trimmed(o metav1.Object) bool {
	_, ok := o.GetAnnotations()[AnnotationTrimmed]
	return ok
}

// TrimMeta drops from a cached object's metadata what no controller reads
// and a tenant may make large: the managed fields, kubectl's
// last-applied-configuration (a copy of the whole object), and every
// label and annotation but those the controllers read (keptMeta).
func TrimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	maps.DeleteFunc(m.Labels, func(k, _ string) bool { return !keptMeta[k] })
	maps.DeleteFunc(m.Annotations, func(k, _ string) bool { return !keptMeta[k] })
	// Annotations are not reserved: a tenant may write this one on any
	// task. The operator's own is at most MaxCacheKeyLength; a longer one
	// is not a cache key, and is not kept.
	if len(m.Annotations[schedv1.AnnotationCacheKey]) > schedv1.MaxCacheKeyLength {
		delete(m.Annotations, schedv1.AnnotationCacheKey)
	}
}

// keptMeta are the labels and annotations the controllers read of a task,
// a workflow or a cron workflow, and the mark of a trimmed copy: an
// informer may transform an object twice, and the second time its bulk is
// gone.
var keptMeta = map[string]bool{
	AnnotationTrimmed:                      true,
	schedv1.LabelManagedBy:                 true,
	schedv1.LabelWorkflow:                  true,
	schedv1.LabelWorkflowStep:              true,
	schedv1.LabelWorkflowItem:              true,
	schedv1.AnnotationPreviousStepFinished: true,
	schedv1.AnnotationScheduledTime:        true,
	// A step's cache key, hashed and whole (api/v1alpha1/stepcache_types.go):
	// the whole key at most MaxCacheKeyLength bytes.
	schedv1.LabelCacheKey: true,
}
