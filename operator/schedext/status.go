package schedext

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
)

// maxNamed bounds how many node names a condition message lists; the
// status fields list them all.
const maxNamed = 5

// observed is what the controller saw of a SchedExt's world.
type observed struct {
	// image is the resolved scheduler image; "" when the name is unknown.
	image string
	// refused says why the image may not run; "" when it may.
	refused string
	// noNamespace says the scheduler namespace is missing; "" when it exists.
	noNamespace string
	// ds is the DaemonSet; nil when it does not exist (yet).
	ds   *appsv1.DaemonSet
	pods []corev1.Pod
	// assignment is this SchedExt's share of the nodes.
	assignment Assignment
}

// computeStatus derives the status from what was observed. It is pure (now
// only stamps condition transitions), so a reconcile that sees nothing new
// writes nothing.
func computeStatus(scx *schedv1.SchedExt, o observed, now metav1.Time) schedv1.SchedExtStatus {
	st := *scx.Status.DeepCopy()
	st.ObservedGeneration = scx.Generation
	st.ResolvedImage = o.image
	st.DesiredNodes, st.ReadyNodes, st.AvailableNodes, st.UnavailableNodes = 0, 0, 0, 0
	st.DaemonSetName = ""
	if o.ds != nil {
		st.DaemonSetName = o.ds.Name
		st.DesiredNodes = o.ds.Status.DesiredNumberScheduled
		st.ReadyNodes = o.ds.Status.NumberReady
		st.AvailableNodes = o.ds.Status.NumberAvailable
		st.UnavailableNodes = o.ds.Status.NumberUnavailable
	}
	st.ConflictingNodes = nil
	for _, c := range o.assignment.Conflicts {
		st.ConflictingNodes = append(st.ConflictingNodes, c.Node)
	}
	troubles := podTroubles(o.pods)
	st.UnsupportedNodes = troubles.nodes(schedv1.ReasonUnsupportedKernel)

	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: scx.Generation, LastTransitionTime: now,
		})
	}

	if o.image == "" {
		msg := fmt.Sprintf("the operator has no image for scheduler %q (its --scheduler-image setting); use another name or set spec.scheduler.image", scx.Spec.Scheduler.Name)
		set(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonUnknownScheduler, msg)
		set(schedv1.ConditionProgressing, metav1.ConditionFalse, schedv1.ReasonUnknownScheduler, "nothing to roll out: "+msg)
		set(schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonUnknownScheduler, msg)
		return st
	}
	if o.noNamespace != "" {
		set(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonSchedulerNamespaceMissing, o.noNamespace)
		set(schedv1.ConditionProgressing, metav1.ConditionFalse, schedv1.ReasonSchedulerNamespaceMissing, "nothing to roll out: "+o.noNamespace)
		set(schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonSchedulerNamespaceMissing, o.noNamespace)
		return st
	}
	if o.refused != "" {
		set(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonImageNotAllowed, o.refused)
		set(schedv1.ConditionProgressing, metav1.ConditionFalse, schedv1.ReasonImageNotAllowed, "nothing to roll out: "+o.refused)
		set(schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonImageNotAllowed, o.refused)
		return st
	}

	// Progressing: the DaemonSet has not yet put the current template on
	// every node it should.
	rollingOut := true
	switch ds := o.ds; {
	case ds == nil:
		set(schedv1.ConditionProgressing, metav1.ConditionTrue, schedv1.ReasonReconciling, "creating the DaemonSet")
	case ds.Status.ObservedGeneration < ds.Generation:
		set(schedv1.ConditionProgressing, metav1.ConditionTrue, schedv1.ReasonReconciling, fmt.Sprintf("DaemonSet %s has not seen its latest spec yet", ds.Name))
	case ds.Status.UpdatedNumberScheduled < ds.Status.DesiredNumberScheduled:
		set(schedv1.ConditionProgressing, metav1.ConditionTrue, schedv1.ReasonReconciling,
			fmt.Sprintf("rolling out: %d of %d nodes run the current template", ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled))
	default:
		rollingOut = false
		set(schedv1.ConditionProgressing, metav1.ConditionFalse, schedv1.ReasonRolledOut,
			fmt.Sprintf("DaemonSet %s runs the current template on all %d nodes", ds.Name, ds.Status.DesiredNumberScheduled))
	}

	conflictMsg := conflictMessage(o.assignment.Conflicts)

	// Ready: attached on every node the SchedExt should run on. The pods'
	// readiness probe is the attach check, so NumberReady counts attaches.
	desired, ready := st.DesiredNodes, st.ReadyNodes
	switch {
	case !rollingOut && desired == 0 && len(o.assignment.Conflicts) > 0:
		set(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonSchedulerConflict, "no nodes left: "+conflictMsg)
	case !rollingOut && desired == 0:
		set(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonNoNodes, "no node matches the nodeSelector (a tainted node counts only when tolerated)")
	case !rollingOut && ready >= desired:
		set(schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached, fmt.Sprintf("the kernel reports the scheduler attached on all %d nodes", desired))
	default:
		reason, detail := troubles.worst()
		switch {
		case reason != "":
		case rollingOut:
			reason, detail = schedv1.ReasonReconciling, "rolling out"
		default:
			reason = schedv1.ReasonNotAttached
			detail = "the kernel does not report the scheduler attached on " + nodeList(troubles.nodes(schedv1.ReasonNotAttached))
		}
		set(schedv1.ConditionReady, metav1.ConditionFalse, reason, fmt.Sprintf("attached on %d of %d nodes; %s", ready, desired, detail))
	}

	// Degraded: what will not fix itself without a person.
	var problems []string
	reason := ""
	add := func(r, msg string) {
		if msg == "" {
			return
		}
		if reason == "" {
			reason = r
		}
		problems = append(problems, msg)
	}
	add(schedv1.ReasonSchedulerConflict, conflictMsg)
	for _, r := range degradingReasons {
		add(r, troubles.message(r))
	}
	if reason == "" {
		set(schedv1.ConditionDegraded, metav1.ConditionFalse, schedv1.ReasonAsExpected, "no conflicting or failing nodes")
	} else {
		set(schedv1.ConditionDegraded, metav1.ConditionTrue, reason, strings.Join(problems, "; "))
	}
	return st
}

// degradingReasons are the pod troubles that make a SchedExt Degraded, most
// telling first. NotAttached is not among them: a loader that is starting
// looks the same.
var degradingReasons = []string{
	schedv1.ReasonUnsupportedKernel, schedv1.ReasonImagePull, schedv1.ReasonCrashLoop,
	schedv1.ReasonUnschedulable, schedv1.ReasonMissingRef, schedv1.ReasonCreateFailed,
}

// conflictMessage names the excluded nodes and who keeps them.
func conflictMessage(cs []Conflict) string {
	if len(cs) == 0 {
		return ""
	}
	byWinner := map[string][]string{}
	var winners []string
	for _, c := range cs {
		if _, ok := byWinner[c.Winner]; !ok {
			winners = append(winners, c.Winner)
		}
		byWinner[c.Winner] = append(byWinner[c.Winner], c.Node)
	}
	slices.Sort(winners)
	parts := make([]string, 0, len(winners))
	for _, w := range winners {
		nodes := byWinner[w]
		noun := "node"
		if len(nodes) > 1 {
			noun = "nodes"
		}
		parts = append(parts, fmt.Sprintf("%s %s kept by the older SchedExt %s", noun, nodeList(nodes), w))
	}
	return strings.Join(parts, "; ") + " (one scheduler per node)"
}

// nodeList names up to maxNamed nodes.
func nodeList(nodes []string) string {
	if len(nodes) <= maxNamed {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:maxNamed], ", "), len(nodes)-maxNamed)
}

// troubles are the nodes whose pod is not Ready, by reason, each with the
// detail its pod gives.
type troubles map[string]map[string]string

func (t troubles) nodes(reason string) []string {
	if len(t[reason]) == 0 {
		return nil
	}
	out := make([]string, 0, len(t[reason]))
	for n := range t[reason] {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// message says what is wrong where, with the detail of the first node.
func (t troubles) message(reason string) string {
	nodes := t.nodes(reason)
	if len(nodes) == 0 {
		return ""
	}
	what := map[string]string{
		schedv1.ReasonUnsupportedKernel: "kernel without sched_ext on",
		schedv1.ReasonImagePull:         "cannot pull the image on",
		schedv1.ReasonCrashLoop:         "the loader keeps exiting on",
		schedv1.ReasonUnschedulable:     "the pod cannot be scheduled on",
		schedv1.ReasonMissingRef:        "the pod cannot be configured on",
		schedv1.ReasonCreateFailed:      "the container cannot start on",
	}[reason]
	msg := what + " " + nodeList(nodes)
	if d := t[reason][nodes[0]]; d != "" {
		msg += " (" + nodes[0] + ": " + d + ")"
	}
	return msg
}

// worst is the most telling degrading reason and its message, or "".
func (t troubles) worst() (reason, msg string) {
	for _, r := range degradingReasons {
		if m := t.message(r); m != "" {
			return r, m
		}
	}
	return "", ""
}

// podTroubles sorts the pods that are not Ready by why. Terminating pods
// are left out: they belong to a rollout or a handover.
func podTroubles(pods []corev1.Pod) troubles {
	t := troubles{}
	for i := range pods {
		pod := &pods[i]
		if !pod.DeletionTimestamp.IsZero() || podReady(pod) {
			continue
		}
		node := targetNode(pod)
		if node == "" {
			continue
		}
		reason, detail := whyNotReady(pod)
		if t[reason] == nil {
			t[reason] = map[string]string{}
		}
		t[reason][node] = detail
	}
	return t
}

// whyNotReady explains a pod that is not Ready: the preflight's verdict on
// the kernel first (its restarts look like any crash loop), then what the
// scheduler or kubelet says; otherwise it is not attached (yet).
func whyNotReady(pod *corev1.Pod) (reason, detail string) {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name != ContainerPreflight {
			continue
		}
		for _, term := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if term != nil && term.ExitCode == ExitUnsupported {
				return schedv1.ReasonUnsupportedKernel, podstatus.Clip(strings.TrimSpace(term.Message))
			}
		}
	}
	if reason, detail := podstatus.Cause(pod); reason != "" {
		return reason, detail
	}
	return schedv1.ReasonNotAttached, ""
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetNode is the node a daemon pod is for: where it runs, or, while it
// is not scheduled, the node the DaemonSet controller pinned it to.
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
