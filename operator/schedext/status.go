package schedext

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
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

// cause is a condition's reason and the message that explains it.
type cause struct{ reason, message string }

// summary is what the conditions are computed from.
type summary struct {
	// blocked is what keeps the scheduler from being rolled out at all (no
	// image for its name, no scheduler namespace, a refused image); zero
	// when nothing does.
	blocked cause
	// rollingOut is set while the DaemonSet does not yet run the current
	// template on every node it should; rollout says how far it is.
	rollingOut bool
	rollout    string
	// desired and ready count the nodes the DaemonSet should run on and
	// those where its pod is Ready. The pods' readiness probe is the attach
	// check, so ready counts attaches.
	desired, ready int32
	// conflicts names the nodes older SchedExts keep; "" when none.
	conflicts string
	// troubles are the nodes whose pod is not Ready, by why.
	troubles troubles
}

// phase is where a SchedExt stands; its Ready and Progressing conditions
// follow from it. It is not in the API: the conditions say it.
type phase string

const (
	// phaseBlocked: nothing can be rolled out; summary.blocked says why.
	phaseBlocked phase = "Blocked"
	// phaseRollingOut: the DaemonSet is putting the current template on
	// its nodes.
	phaseRollingOut phase = "RollingOut"
	// phaseNoNodes: rolled out, on no node: none matches, or older
	// SchedExts keep them all.
	phaseNoNodes phase = "NoNodes"
	// phaseAttached: attached on every node it should run on.
	phaseAttached phase = "Attached"
	// phaseNotAttached: rolled out, but not attached on every node.
	phaseNotAttached phase = "NotAttached"
)

// computeStatus derives the status from what was observed. It is pure (now
// only stamps condition transitions), so a reconcile that sees nothing new
// writes nothing. The counts come from the DaemonSet and the assignment;
// the conditions from a summary (summarize), each by its function.
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
	sum := summarize(scx, o)
	st.UnsupportedNodes = sum.troubles.nodes(schedv1.ReasonUnsupportedKernel)
	// Both are sorted by name; the API holds the first MaxStatusNodes.
	st.ConflictingNodes = st.ConflictingNodes[:min(len(st.ConflictingNodes), schedv1.MaxStatusNodes)]
	st.UnsupportedNodes = st.UnsupportedNodes[:min(len(st.UnsupportedNodes), schedv1.MaxStatusNodes)]

	ph := phaseOf(sum)
	ready, progressing, degraded := readyCondition(ph, sum), progressingCondition(ph, sum), degradedCondition(sum)
	// A condition new to the list goes at its end: a blocked SchedExt
	// lists Ready first, any other Progressing first.
	order := []metav1.Condition{progressing, ready, degraded}
	if ph == phaseBlocked {
		order = []metav1.Condition{ready, progressing, degraded}
	}
	for _, c := range order {
		c.LastTransitionTime = now
		status.SetCondition(&st.Conditions, scx.Generation, c)
	}
	return st
}

// summarize reads the observation into what the conditions need.
func summarize(scx *schedv1.SchedExt, o observed) summary {
	sum := summary{
		blocked:   blockedBy(scx, o),
		conflicts: conflictMessage(o.assignment.Conflicts),
		troubles:  podTroubles(o.pods),
	}
	sum.rollingOut, sum.rollout = rolloutOf(o.ds)
	if o.ds != nil {
		sum.desired, sum.ready = o.ds.Status.DesiredNumberScheduled, o.ds.Status.NumberReady
	}
	return sum
}

// blockedBy says what keeps the scheduler from being rolled out at all:
// no image for its name, then a missing scheduler namespace, then a
// refused image; zero when nothing does.
func blockedBy(scx *schedv1.SchedExt, o observed) cause {
	switch {
	case o.image == "":
		return cause{schedv1.ReasonUnknownScheduler, fmt.Sprintf("the operator has no image for scheduler %q (its --scheduler-image setting); use another name or set spec.scheduler.image", scx.Spec.Scheduler.Name)}
	case o.noNamespace != "":
		return cause{schedv1.ReasonSchedulerNamespaceMissing, o.noNamespace}
	case o.refused != "":
		return cause{schedv1.ReasonImageNotAllowed, o.refused}
	}
	return cause{}
}

// rolloutOf says whether the DaemonSet (nil: not created yet) has yet to
// put its current template on every node it should, and how far it is.
func rolloutOf(ds *appsv1.DaemonSet) (rollingOut bool, msg string) {
	switch {
	case ds == nil:
		return true, "creating the DaemonSet"
	case ds.Status.ObservedGeneration < ds.Generation:
		return true, fmt.Sprintf("DaemonSet %s has not seen its latest spec yet", ds.Name)
	case ds.Status.UpdatedNumberScheduled < ds.Status.DesiredNumberScheduled:
		return true, fmt.Sprintf("rolling out: %d of %d nodes run the current template", ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled)
	}
	return false, fmt.Sprintf("DaemonSet %s runs the current template on all %d nodes", ds.Name, ds.Status.DesiredNumberScheduled)
}

// phaseOf is where the SchedExt stands; see phase.
func phaseOf(sum summary) phase {
	switch {
	case sum.blocked.reason != "":
		return phaseBlocked
	case sum.rollingOut:
		return phaseRollingOut
	case sum.desired == 0:
		return phaseNoNodes
	case sum.ready >= sum.desired:
		return phaseAttached
	}
	return phaseNotAttached
}

// readyCondition says whether the scheduler is attached on every node the
// SchedExt should run on, and if not why: what blocks it, then the most
// telling pod trouble, then the rollout.
func readyCondition(ph phase, sum summary) metav1.Condition {
	c := metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse}
	switch ph {
	case phaseBlocked:
		c.Reason, c.Message = sum.blocked.reason, sum.blocked.message
	case phaseNoNodes:
		if sum.conflicts != "" {
			c.Reason, c.Message = schedv1.ReasonSchedulerConflict, "no nodes left: "+sum.conflicts
		} else {
			c.Reason, c.Message = schedv1.ReasonNoNodes, "no node matches the nodeSelector (a tainted node counts only when tolerated)"
		}
	case phaseAttached:
		c.Status, c.Reason = metav1.ConditionTrue, schedv1.ReasonAttached
		c.Message = fmt.Sprintf("the kernel reports the scheduler attached on all %d nodes", sum.desired)
	default:
		reason, detail := sum.troubles.worst()
		switch {
		case reason != "":
		case ph == phaseRollingOut:
			reason, detail = schedv1.ReasonReconciling, "rolling out"
		default:
			reason = schedv1.ReasonNotAttached
			detail = "the kernel does not report the scheduler attached on " + nodeList(sum.troubles.nodes(schedv1.ReasonNotAttached))
		}
		c.Reason, c.Message = reason, fmt.Sprintf("attached on %d of %d nodes; %s", sum.ready, sum.desired, detail)
	}
	return c
}

// progressingCondition says whether the DaemonSet has yet to put the
// current template on every node it should.
func progressingCondition(ph phase, sum summary) metav1.Condition {
	c := metav1.Condition{Type: schedv1.ConditionProgressing, Status: metav1.ConditionFalse}
	switch ph {
	case phaseBlocked:
		c.Reason, c.Message = sum.blocked.reason, "nothing to roll out: "+sum.blocked.message
	case phaseRollingOut:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, schedv1.ReasonReconciling, sum.rollout
	default:
		c.Reason, c.Message = schedv1.ReasonRolledOut, sum.rollout
	}
	return c
}

// degradedCondition says what will not fix itself without a person: what
// blocks the rollout; otherwise every conflict and degrading pod trouble,
// the first one's reason first.
func degradedCondition(sum summary) metav1.Condition {
	c := metav1.Condition{Type: schedv1.ConditionDegraded, Status: metav1.ConditionTrue}
	if sum.blocked.reason != "" {
		c.Reason, c.Message = sum.blocked.reason, sum.blocked.message
		return c
	}
	var problems []string
	add := func(reason, msg string) {
		if msg == "" {
			return
		}
		if c.Reason == "" {
			c.Reason = reason
		}
		problems = append(problems, msg)
	}
	add(schedv1.ReasonSchedulerConflict, sum.conflicts)
	for _, r := range degradingReasons {
		add(r, sum.troubles.message(r))
	}
	if c.Reason == "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, schedv1.ReasonAsExpected, "no conflicting or failing nodes"
		return c
	}
	c.Message = strings.Join(problems, "; ")
	return c
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
				return schedv1.ReasonUnsupportedKernel, podstatus.ClipMessage(strings.TrimSpace(term.Message))
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
