package schedext

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

var (
	now   = metav1.NewTime(day0)
	later = metav1.NewTime(day0.Add(time.Minute))
)

// dsStatus builds a DaemonSet that has seen its spec, with these counts.
func dsStatus(desired, ready, updated int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "scx-s", Namespace: "scheds", Generation: 2},
		Status: appsv1.DaemonSetStatus{
			ObservedGeneration: 2, DesiredNumberScheduled: desired, CurrentNumberScheduled: desired,
			NumberReady: ready, NumberAvailable: ready, NumberUnavailable: desired - ready, UpdatedNumberScheduled: updated,
		},
	}
}

type podWrapper struct{ corev1.Pod }

func makePod(node string) *podWrapper {
	return &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "scx-s-" + node, Namespace: "scheds"},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}
func (p *podWrapper) ready(ok bool) *podWrapper {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: s})
	return p
}
func (p *podWrapper) unsupported(msg string) *podWrapper {
	p.Status.Phase = corev1.PodPending
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{
		Name:                 ContainerPreflight,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: ExitUnsupported, Message: msg + "\n"}},
	}}
	return p.ready(false)
}
func (p *podWrapper) waiting(container, reason, msg string) *podWrapper {
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
		Name: container, Image: "reg/scx:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
	})
	return p.ready(false)
}
func (p *podWrapper) crashed(code int32, msg string) *podWrapper {
	p.waiting(ContainerScheduler, "CrashLoopBackOff", "back-off 40s")
	p.Status.ContainerStatuses[len(p.Status.ContainerStatuses)-1].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}
	return p
}
func (p *podWrapper) unschedulable(target, msg string) *podWrapper {
	p.Spec.NodeName = ""
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{target}}}}},
	}}}
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}
	return p
}
func (p *podWrapper) terminating() *podWrapper {
	p.DeletionTimestamp = &now
	return p
}

func pods(ps ...*podWrapper) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Pod)
	}
	return out
}

// cond is the part of a condition a case checks: status and reason exactly,
// and words the message must contain.
type cond struct {
	Status metav1.ConditionStatus
	Reason string
	Says   []string
}

type wantStatus struct {
	Image                              string
	DaemonSet                          string
	Desired, Ready, Available, Unavail int32
	Conflicting, Unsupported           []string
	ReadyCond, Progressing, Degraded   cond
}

func TestComputeStatus(t *testing.T) {
	scx := MakeSchedExt("s").Scheduler("scx_lavd").Obj()
	scx.Generation = 3
	conflicts := Assignment{Nodes: []string{"n1"}, Conflicts: []Conflict{{Node: "n2", Winner: "old"}, {Node: "n3", Winner: "old"}}}
	attached := cond{metav1.ConditionTrue, schedv1.ReasonAttached, nil}
	rolledOut := cond{metav1.ConditionFalse, schedv1.ReasonRolledOut, nil}
	fine := cond{metav1.ConditionFalse, schedv1.ReasonAsExpected, nil}
	cases := map[string]struct {
		o    observed
		want wantStatus
	}{
		"unknown scheduler: no DaemonSet, Degraded": {
			o: observed{},
			want: wantStatus{
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonUnknownScheduler, []string{`"scx_lavd"`, "spec.scheduler.image"}},
				Progressing: cond{metav1.ConditionFalse, schedv1.ReasonUnknownScheduler, nil},
				Degraded:    cond{metav1.ConditionTrue, schedv1.ReasonUnknownScheduler, nil},
			},
		},
		"no scheduler namespace: no DaemonSet, Degraded saying what to do": {
			o: observed{image: "reg/scx:1", noNamespace: "the scheduler namespace scheds does not exist; 'kubectl sched install' creates it"},
			want: wantStatus{
				Image:       "reg/scx:1",
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonSchedulerNamespaceMissing, []string{"kubectl sched install"}},
				Progressing: cond{metav1.ConditionFalse, schedv1.ReasonSchedulerNamespaceMissing, []string{"nothing to roll out"}},
				Degraded:    cond{metav1.ConditionTrue, schedv1.ReasonSchedulerNamespaceMissing, nil},
			},
		},
		"DaemonSet not created yet": {
			o: observed{image: "reg/scx:1", assignment: Assignment{Nodes: []string{"n1"}}},
			want: wantStatus{
				Image:       "reg/scx:1",
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonReconciling, []string{"attached on 0 of 0 nodes"}},
				Progressing: cond{metav1.ConditionTrue, schedv1.ReasonReconciling, []string{"creating"}},
				Degraded:    fine,
			},
		},
		"attached everywhere": {
			o: observed{image: "reg/scx:1", ds: dsStatus(3, 3, 3), pods: pods(makePod("n1").ready(true), makePod("n2").ready(true), makePod("n3").ready(true))},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 3, Ready: 3, Available: 3,
				ReadyCond: cond{metav1.ConditionTrue, schedv1.ReasonAttached, []string{"all 3 nodes"}}, Progressing: rolledOut, Degraded: fine,
			},
		},
		"running but not attached": {
			o: observed{image: "reg/scx:1", ds: dsStatus(3, 1, 3), pods: pods(makePod("n1").ready(true), makePod("n3").ready(false), makePod("n2").ready(false))},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 3, Ready: 1, Available: 1, Unavail: 2,
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonNotAttached, []string{"attached on 1 of 3 nodes", "n2, n3"}},
				Progressing: rolledOut, Degraded: fine,
			},
		},
		"rolling out": {
			o: observed{image: "reg/scx:1", ds: dsStatus(3, 3, 1)},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 3, Ready: 3, Available: 3,
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonReconciling, nil},
				Progressing: cond{metav1.ConditionTrue, schedv1.ReasonReconciling, []string{"1 of 3 nodes"}},
				Degraded:    fine,
			},
		},
		"DaemonSet has not seen its spec": {
			o: observed{image: "reg/scx:1", ds: func() *appsv1.DaemonSet { ds := dsStatus(3, 3, 3); ds.Generation = 3; return ds }()},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 3, Ready: 3, Available: 3,
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonReconciling, nil},
				Progressing: cond{metav1.ConditionTrue, schedv1.ReasonReconciling, []string{"latest spec"}},
				Degraded:    fine,
			},
		},
		"conflicts: Ready where it runs, Degraded naming nodes and winner": {
			o: observed{image: "reg/scx:1", ds: dsStatus(1, 1, 1), assignment: conflicts, pods: pods(makePod("n1").ready(true))},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 1, Ready: 1, Available: 1, Conflicting: []string{"n2", "n3"},
				ReadyCond: attached, Progressing: rolledOut,
				Degraded: cond{metav1.ConditionTrue, schedv1.ReasonSchedulerConflict, []string{"nodes n2, n3 kept by the older SchedExt old"}},
			},
		},
		"conflicts leave no node": {
			o: observed{image: "reg/scx:1", ds: dsStatus(0, 0, 0), assignment: Assignment{Conflicts: []Conflict{{Node: "n2", Winner: "a"}, {Node: "n3", Winner: "b"}}}},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Conflicting: []string{"n2", "n3"},
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonSchedulerConflict, []string{"node n2 kept by the older SchedExt a; node n3 kept by the older SchedExt b"}},
				Progressing: rolledOut,
				Degraded:    cond{metav1.ConditionTrue, schedv1.ReasonSchedulerConflict, nil},
			},
		},
		"no matching nodes": {
			o: observed{image: "reg/scx:1", ds: dsStatus(0, 0, 0)},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s",
				ReadyCond: cond{metav1.ConditionFalse, schedv1.ReasonNoNodes, nil}, Progressing: rolledOut, Degraded: fine,
			},
		},
		"a kernel without sched_ext is reported, not taken for a crash loop": {
			o: observed{image: "reg/scx:1", ds: dsStatus(2, 1, 2), pods: pods(makePod("n1").ready(true), makePod("old-kernel").unsupported("sched_ext not supported by this kernel: /sys/kernel/sched_ext is absent"))},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 2, Ready: 1, Available: 1, Unavail: 1, Unsupported: []string{"old-kernel"},
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonUnsupportedKernel, []string{"attached on 1 of 2 nodes", "old-kernel"}},
				Progressing: rolledOut,
				Degraded:    cond{metav1.ConditionTrue, schedv1.ReasonUnsupportedKernel, []string{"kernel without sched_ext on old-kernel (old-kernel: sched_ext not supported by this kernel"}},
			},
		},
		"image pull failure": {
			o: observed{image: "reg/scx:1", ds: dsStatus(1, 0, 1), pods: pods(makePod("n1").waiting(ContainerScheduler, "ImagePullBackOff", "not found"))},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 1, Unavail: 1,
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonImagePull, []string{"image reg/scx:1: ImagePullBackOff: not found"}},
				Progressing: rolledOut,
				Degraded:    cond{metav1.ConditionTrue, schedv1.ReasonImagePull, []string{"cannot pull the image on n1"}},
			},
		},
		"loader crash loop carries its last words": {
			o: observed{image: "reg/scx:1", ds: dsStatus(1, 0, 1), pods: pods(makePod("n1").crashed(1, "failed to attach: EBUSY"))},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 1, Unavail: 1,
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonCrashLoop, nil},
				Progressing: rolledOut,
				Degraded:    cond{metav1.ConditionTrue, schedv1.ReasonCrashLoop, []string{"last exit code 1: failed to attach: EBUSY"}},
			},
		},
		"unschedulable pod is placed on its target node": {
			o: observed{image: "reg/scx:1", ds: dsStatus(1, 0, 1), pods: pods(makePod("n1").unschedulable("big", "Insufficient cpu"))},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 1, Unavail: 1,
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonUnschedulable, nil},
				Progressing: rolledOut,
				Degraded:    cond{metav1.ConditionTrue, schedv1.ReasonUnschedulable, []string{"big: no node can run the pod: Insufficient cpu"}},
			},
		},
		"conflict and unsupported together: both said, conflict first": {
			o: observed{image: "reg/scx:1", ds: dsStatus(1, 0, 1), assignment: conflicts, pods: pods(makePod("n1").unsupported("no sched_ext"))},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 1, Unavail: 1, Conflicting: []string{"n2", "n3"}, Unsupported: []string{"n1"},
				ReadyCond:   cond{metav1.ConditionFalse, schedv1.ReasonUnsupportedKernel, nil},
				Progressing: rolledOut,
				Degraded:    cond{metav1.ConditionTrue, schedv1.ReasonSchedulerConflict, []string{"older SchedExt old", "; kernel without sched_ext on n1"}},
			},
		},
		"terminating pods of a handover are ignored": {
			o: observed{image: "reg/scx:1", ds: dsStatus(1, 1, 1), pods: pods(makePod("n1").ready(true), makePod("n9").crashed(1, "x").terminating())},
			want: wantStatus{
				Image: "reg/scx:1", DaemonSet: "scx-s", Desired: 1, Ready: 1, Available: 1,
				ReadyCond: attached, Progressing: rolledOut, Degraded: fine,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := computeStatus(scx, tc.o, now)
			got := wantStatus{
				Image: st.ResolvedImage, DaemonSet: st.DaemonSetName,
				Desired: st.DesiredNodes, Ready: st.ReadyNodes, Available: st.AvailableNodes, Unavail: st.UnavailableNodes,
				Conflicting: st.ConflictingNodes, Unsupported: st.UnsupportedNodes,
				ReadyCond: condOf(st, schedv1.ConditionReady), Progressing: condOf(st, schedv1.ConditionProgressing), Degraded: condOf(st, schedv1.ConditionDegraded),
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(cond{}, "Says")); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			for _, c := range []struct {
				typ  string
				want cond
			}{{schedv1.ConditionReady, tc.want.ReadyCond}, {schedv1.ConditionProgressing, tc.want.Progressing}, {schedv1.ConditionDegraded, tc.want.Degraded}} {
				msg := meta.FindStatusCondition(st.Conditions, c.typ).Message
				for _, w := range c.want.Says {
					if !strings.Contains(msg, w) {
						t.Errorf("%s message %q does not say %q", c.typ, msg, w)
					}
				}
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d, want 3", st.ObservedGeneration)
			}
			for _, c := range st.Conditions {
				if c.ObservedGeneration != 3 || !c.LastTransitionTime.Equal(&now) {
					t.Errorf("condition %s: observedGeneration %d, lastTransitionTime %v", c.Type, c.ObservedGeneration, c.LastTransitionTime)
				}
			}

			// The same observation later changes nothing: no write, and
			// the transition times stay.
			again := scx.DeepCopy()
			again.Status = st
			if diff := cmp.Diff(st, computeStatus(again, tc.o, later)); diff != "" {
				t.Errorf("recomputing changed the status (-first +second):\n%s", diff)
			}
		})
	}
}

func condOf(st schedv1.SchedExtStatus, typ string) cond {
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		return cond{}
	}
	return cond{Status: c.Status, Reason: c.Reason}
}

func TestConflictMessageNamesAFewNodes(t *testing.T) {
	var cs []Conflict
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7"} {
		cs = append(cs, Conflict{Node: n, Winner: "old"})
	}
	want := "nodes n1, n2, n3, n4, n5 and 2 more kept by the older SchedExt old (one scheduler per node)"
	if got := conflictMessage(cs); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The tables below test computeStatus's parts one by one, from an
// observation or a summary (TestComputeStatus covers how they fit).

func TestBlockedBy(t *testing.T) {
	scx := MakeSchedExt("s").Scheduler("scx_lavd").Obj()
	unknown := cause{schedv1.ReasonUnknownScheduler,
		`the operator has no image for scheduler "scx_lavd" (its --scheduler-image setting); use another name or set spec.scheduler.image`}
	cases := map[string]struct {
		o    observed
		want cause
	}{
		"nothing blocks":         {o: observed{image: "reg/scx:1"}},
		"no image for the name":  {o: observed{}, want: unknown},
		"no scheduler namespace": {o: observed{image: "reg/scx:1", noNamespace: "no namespace"}, want: cause{schedv1.ReasonSchedulerNamespaceMissing, "no namespace"}},
		"a refused image":        {o: observed{image: "evil/scx:1", refused: "not allowed"}, want: cause{schedv1.ReasonImageNotAllowed, "not allowed"}},
		"no image comes first":   {o: observed{noNamespace: "no namespace", refused: "not allowed"}, want: unknown},
		"then the namespace":     {o: observed{image: "evil/scx:1", noNamespace: "no namespace", refused: "not allowed"}, want: cause{schedv1.ReasonSchedulerNamespaceMissing, "no namespace"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, blockedBy(scx, tc.o), cmp.AllowUnexported(cause{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRolloutOf(t *testing.T) {
	type rollout struct {
		RollingOut bool
		Msg        string
	}
	unseen := dsStatus(3, 3, 3)
	unseen.Generation = 3
	cases := map[string]struct {
		ds   *appsv1.DaemonSet
		want rollout
	}{
		"not created":          {want: rollout{true, "creating the DaemonSet"}},
		"spec not seen":        {ds: unseen, want: rollout{true, "DaemonSet scx-s has not seen its latest spec yet"}},
		"template not applied": {ds: dsStatus(3, 3, 1), want: rollout{true, "rolling out: 1 of 3 nodes run the current template"}},
		"rolled out":           {ds: dsStatus(3, 1, 3), want: rollout{false, "DaemonSet scx-s runs the current template on all 3 nodes"}},
		"rolled out on none":   {ds: dsStatus(0, 0, 0), want: rollout{false, "DaemonSet scx-s runs the current template on all 0 nodes"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got rollout
			got.RollingOut, got.Msg = rolloutOf(tc.ds)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Summaries the condition tables share.
var (
	refused    = cause{schedv1.ReasonImageNotAllowed, "image evil/scx:1 is not allowed"}
	conflicted = "node n2 kept by the older SchedExt a (one scheduler per node)"
	crashing   = troubles{schedv1.ReasonCrashLoop: {"n1": "last exit code 1: boom"}}
	unattached = troubles{schedv1.ReasonNotAttached: {"n3": "", "n2": ""}}
	// unsupported and failing to pull: the kernel is the more telling.
	twoTroubles = troubles{schedv1.ReasonImagePull: {"n2": ""}, schedv1.ReasonUnsupportedKernel: {"n1": "no sched_ext"}}
)

func TestPhaseOf(t *testing.T) {
	cases := map[string]struct {
		sum  summary
		want phase
	}{
		"blocked, whatever the DaemonSet":  {sum: summary{blocked: refused, rollingOut: true, desired: 3, ready: 3}, want: phaseBlocked},
		"rolling out, even when all ready": {sum: summary{rollingOut: true, desired: 3, ready: 3}, want: phaseRollingOut},
		"no nodes":                         {sum: summary{}, want: phaseNoNodes},
		"no nodes left by conflicts":       {sum: summary{conflicts: conflicted}, want: phaseNoNodes},
		"attached":                         {sum: summary{desired: 3, ready: 3}, want: phaseAttached},
		"not attached everywhere":          {sum: summary{desired: 3, ready: 2, troubles: unattached}, want: phaseNotAttached},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, phaseOf(tc.sum)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadyCondition(t *testing.T) {
	cases := map[string]struct {
		phase phase
		sum   summary
		want  metav1.Condition
	}{
		"blocked": {
			phase: phaseBlocked, sum: summary{blocked: refused},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonImageNotAllowed, Message: "image evil/scx:1 is not allowed"},
		},
		"no nodes": {
			phase: phaseNoNodes,
			want:  metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonNoNodes, Message: "no node matches the nodeSelector (a tainted node counts only when tolerated)"},
		},
		"no nodes left by conflicts": {
			phase: phaseNoNodes, sum: summary{conflicts: conflicted},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonSchedulerConflict, Message: "no nodes left: " + conflicted},
		},
		"attached": {
			phase: phaseAttached, sum: summary{desired: 3, ready: 3, conflicts: conflicted},
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonAttached, Message: "the kernel reports the scheduler attached on all 3 nodes"},
		},
		"rolling out": {
			phase: phaseRollingOut, sum: summary{rollingOut: true, desired: 3, ready: 1, troubles: unattached},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonReconciling, Message: "attached on 1 of 3 nodes; rolling out"},
		},
		"rolling out, a pod in trouble": {
			phase: phaseRollingOut, sum: summary{rollingOut: true, desired: 3, ready: 1, troubles: crashing},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonCrashLoop, Message: "attached on 1 of 3 nodes; the loader keeps exiting on n1 (n1: last exit code 1: boom)"},
		},
		"not attached": {
			phase: phaseNotAttached, sum: summary{desired: 3, ready: 1, troubles: unattached},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonNotAttached, Message: "attached on 1 of 3 nodes; the kernel does not report the scheduler attached on n2, n3"},
		},
		"not attached: the most telling trouble": {
			phase: phaseNotAttached, sum: summary{desired: 2, ready: 0, troubles: twoTroubles},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonUnsupportedKernel, Message: "attached on 0 of 2 nodes; kernel without sched_ext on n1 (n1: no sched_ext)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.want.Type = schedv1.ConditionReady
			if diff := cmp.Diff(tc.want, readyCondition(tc.phase, tc.sum)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestProgressingCondition(t *testing.T) {
	done := "DaemonSet scx-s runs the current template on all 3 nodes"
	rolledOut := metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonRolledOut, Message: done}
	cases := map[string]struct {
		phase phase
		sum   summary
		want  metav1.Condition
	}{
		"blocked: nothing to roll out": {
			phase: phaseBlocked, sum: summary{blocked: refused, rollingOut: true, rollout: "creating the DaemonSet"},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonImageNotAllowed, Message: "nothing to roll out: image evil/scx:1 is not allowed"},
		},
		"rolling out": {
			phase: phaseRollingOut, sum: summary{rollingOut: true, rollout: "rolling out: 1 of 3 nodes run the current template"},
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonReconciling, Message: "rolling out: 1 of 3 nodes run the current template"},
		},
		"rolled out, attached":     {phase: phaseAttached, sum: summary{rollout: done}, want: rolledOut},
		"rolled out, not attached": {phase: phaseNotAttached, sum: summary{rollout: done, troubles: crashing}, want: rolledOut},
		"rolled out on no node":    {phase: phaseNoNodes, sum: summary{rollout: done}, want: rolledOut},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.want.Type = schedv1.ConditionProgressing
			if diff := cmp.Diff(tc.want, progressingCondition(tc.phase, tc.sum)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDegradedCondition(t *testing.T) {
	fine := metav1.Condition{Status: metav1.ConditionFalse, Reason: schedv1.ReasonAsExpected, Message: "no conflicting or failing nodes"}
	cases := map[string]struct {
		sum  summary
		want metav1.Condition
	}{
		"fine":                         {sum: summary{desired: 3, ready: 3}, want: fine},
		"not attached is not degraded": {sum: summary{desired: 3, ready: 1, troubles: unattached}, want: fine},
		"blocked, and nothing else said": {
			sum:  summary{blocked: refused, conflicts: conflicted, troubles: crashing},
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonImageNotAllowed, Message: "image evil/scx:1 is not allowed"},
		},
		"a pod in trouble": {
			sum:  summary{desired: 1, troubles: crashing},
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonCrashLoop, Message: "the loader keeps exiting on n1 (n1: last exit code 1: boom)"},
		},
		"every trouble, the most telling first": {
			sum: summary{desired: 2, troubles: twoTroubles},
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonUnsupportedKernel,
				Message: "kernel without sched_ext on n1 (n1: no sched_ext); cannot pull the image on n2"},
		},
		"a conflict before any trouble": {
			sum: summary{desired: 2, conflicts: conflicted, troubles: twoTroubles},
			want: metav1.Condition{Status: metav1.ConditionTrue, Reason: schedv1.ReasonSchedulerConflict,
				Message: conflicted + "; kernel without sched_ext on n1 (n1: no sched_ext); cannot pull the image on n2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.want.Type = schedv1.ConditionDegraded
			if diff := cmp.Diff(tc.want, degradedCondition(tc.sum)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusListsAtMostMaxStatusNodes: a SchedExt whose selector conflicts
// on more nodes than the API's bound lists the first ones by name (a status
// write over the bound would be refused); the condition still counts all.
func TestStatusListsAtMostMaxStatusNodes(t *testing.T) {
	var a Assignment
	for i := range schedv1.MaxStatusNodes + 5 {
		a.Conflicts = append(a.Conflicts, Conflict{Node: fmt.Sprintf("n%05d", i), Winner: "older"})
	}
	scx := MakeSchedExt("s").Scheduler("scx_lavd").Obj()
	st := computeStatus(scx, observed{image: "reg/scx:1", ds: dsStatus(0, 0, 0), assignment: a}, now)
	if n := len(st.ConflictingNodes); n != schedv1.MaxStatusNodes || st.ConflictingNodes[0] != "n00000" {
		t.Errorf("conflictingNodes: %d listed, first %q; want %d from n00000", n, st.ConflictingNodes[0], schedv1.MaxStatusNodes)
	}
	degraded := meta.FindStatusCondition(st.Conditions, schedv1.ConditionDegraded)
	if want := fmt.Sprintf("and %d more", schedv1.MaxStatusNodes+5-maxNamed); degraded == nil || !strings.Contains(degraded.Message, want) {
		t.Errorf("Degraded = %+v, want its message to count the rest (%q)", degraded, want)
	}
}
