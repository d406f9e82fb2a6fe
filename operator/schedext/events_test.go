package schedext

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestStatusEvents(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: typ + " " + reason}
	}
	st := func(nodes []string, conds ...metav1.Condition) *schedv1.SchedExtStatus {
		return &schedv1.SchedExtStatus{DesiredNodes: 3, ReadyNodes: 2, ConflictingNodes: nodes, Conditions: conds}
	}
	attached := cond(schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	notAttached := cond(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonNotAttached)
	fine := cond(schedv1.ConditionDegraded, metav1.ConditionFalse, schedv1.ReasonAsExpected)
	conflict := cond(schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonSchedulerConflict)
	unsupported := cond(schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonUnsupportedKernel)
	cases := map[string]struct {
		before, now *schedv1.SchedExtStatus
		want        []note
	}{
		"attached": {before: st(nil), now: st(nil, attached, fine), want: []note{
			{corev1.EventTypeNormal, schedv1.ReasonAttached, "Attach", attached.Message, "SchedExt attached", []any{"desiredNodes", int32(3)}},
		}},
		"still attached":         {before: st(nil, attached, fine), now: st(nil, attached, fine)},
		"not attached yet":       {before: st(nil), now: st(nil, notAttached, fine)},
		"still not attached":     {before: st(nil, notAttached, fine), now: st(nil, notAttached, fine)},
		"no conditions computed": {before: st(nil, attached, conflict), now: st(nil)},
		"no longer attached, and degraded": {before: st(nil, attached, fine), now: st([]string{"n1"}, notAttached, conflict), want: []note{
			{corev1.EventTypeWarning, schedv1.ReasonNotAttached, "Attach", notAttached.Message, "SchedExt no longer attached everywhere",
				[]any{"reason", schedv1.ReasonNotAttached, "readyNodes", int32(2), "desiredNodes", int32(3)}},
			{corev1.EventTypeWarning, schedv1.ReasonSchedulerConflict, "Arbitrate", conflict.Message, "SchedExt degraded",
				[]any{"reason", schedv1.ReasonSchedulerConflict, "conflictingNodes", 1, "unsupportedNodes", 0}},
		}},
		"degraded for another reason": {before: st(nil, notAttached, conflict), now: st(nil, notAttached, unsupported), want: []note{
			{corev1.EventTypeWarning, schedv1.ReasonUnsupportedKernel, "Arbitrate", unsupported.Message, "SchedExt degraded",
				[]any{"reason", schedv1.ReasonUnsupportedKernel, "conflictingNodes", 0, "unsupportedNodes", 0}},
		}},
		"degraded on other nodes": {before: st([]string{"n1"}, notAttached, conflict), now: st([]string{"n1", "n2"}, notAttached, conflict), want: []note{
			{corev1.EventTypeWarning, schedv1.ReasonSchedulerConflict, "Arbitrate", conflict.Message, "SchedExt degraded",
				[]any{"reason", schedv1.ReasonSchedulerConflict, "conflictingNodes", 2, "unsupportedNodes", 0}},
		}},
		"degraded the same, message aside": {before: st([]string{"n1"}, notAttached, conflict),
			now: st([]string{"n1"}, notAttached, metav1.Condition{Type: schedv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: schedv1.ReasonSchedulerConflict, Message: "restarted 5 times"})},
		"no longer degraded": {before: st(nil, attached, conflict), now: st(nil, attached, fine), want: []note{
			{corev1.EventTypeNormal, schedv1.ReasonAsExpected, "Arbitrate", "no longer degraded (was SchedulerConflict)", "SchedExt no longer degraded",
				[]any{"was", schedv1.ReasonSchedulerConflict}},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, statusEvents(tc.before, tc.now), cmp.AllowUnexported(note{})); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
