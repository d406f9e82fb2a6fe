package userdeployment

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// rev is revision n of an app, made at, recording the template of hash.
func rev(n int64, hash string, at time.Time) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at), Labels: map[string]string{schedv1.LabelRevisionHash: hash}},
		Revision:   n,
	}
}

// TestRollBackTo: when the operator rolls a revision back, and to what.
func TestRollBackTo(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	onDegraded := func(edit func(*schedv1.UserDeploymentSpec)) *schedv1.UserDeployment {
		return MakeUserDeployment("shop", "team").Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
			Spec(func(s *schedv1.UserDeploymentSpec) {
				s.Rollback = schedv1.RollbackOnDegraded
				s.ProgressDeadline = &metav1.Duration{Duration: time.Minute}
				if edit != nil {
					edit(s)
				}
			}).Obj()
	}
	history := func(revs ...*appsv1.ControllerRevision) revisions {
		return revisions{history: revs, current: revs[len(revs)-1]}
	}
	old := now.Add(-2 * time.Minute)
	failing := schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentDegraded, LastRunningRevision: 1}
	for name, tc := range map[string]struct {
		ud       *schedv1.UserDeployment
		st       schedv1.UserDeploymentStatus
		rv       revisions
		to       int64
		waitLeft time.Duration
	}{
		"past its deadline: back to the last that ran": {onDegraded(nil), failing, history(rev(1, "a", old), rev(2, "b", old)), 1, 0},
		"within its deadline: wait":                    {onDegraded(nil), failing, history(rev(1, "a", old), rev(2, "b", now.Add(-20*time.Second))), 0, 40 * time.Second},
		"not Running yet, Progressing": {onDegraded(nil), schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentProgressing, LastRunningRevision: 1},
			history(rev(1, "a", old), rev(2, "b", old)), 1, 0},
		"Running": {onDegraded(nil), schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentRunning, LastRunningRevision: 2},
			history(rev(1, "a", old), rev(2, "b", old)), 0, 0},
		"policy Never": {onDegraded(func(s *schedv1.UserDeploymentSpec) { s.Rollback = "" }), failing,
			history(rev(1, "a", old), rev(2, "b", old)), 0, 0},
		"stopped": {onDegraded(func(s *schedv1.UserDeploymentSpec) { s.State = schedv1.StateStopped }), failing,
			history(rev(1, "a", old), rev(2, "b", old)), 0, 0},
		"rolled back already: once per revision": {onDegraded(nil),
			schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentDegraded, LastRunningRevision: 1, RolledBack: &schedv1.RolledBack{FromRevision: 2, ToRevision: 1}},
			history(rev(1, "a", old), rev(2, "b", old)), 0, 0},
		"the revision that fails is the last that ran": {onDegraded(nil),
			schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentDegraded, LastRunningRevision: 2},
			history(rev(1, "a", old), rev(2, "b", old)), 0, 0},
		"nothing ever ran":          {onDegraded(nil), schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentDegraded}, history(rev(1, "a", old)), 0, 0},
		"the last that ran is gone": {onDegraded(nil), failing, history(rev(2, "b", old)), 0, 0},
		"the same template as the last that ran": {onDegraded(nil), failing,
			history(rev(1, "a", old), rev(2, "b", old), rev(3, "a", old)), 0, 0},
		"not recorded": {onDegraded(nil), failing, revisions{history: []*appsv1.ControllerRevision{rev(1, "a", old)}}, 0, 0},
		"an older one ran, a newer one failed too": {onDegraded(nil), failing,
			history(rev(1, "a", old), rev(2, "b", old), rev(3, "c", old)), 1, 0},
		"made while Stopped, started 20s ago: wait": {onDegraded(nil),
			schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentDegraded, LastRunningRevision: 1, CurrentRevisionTime: &metav1.Time{Time: now.Add(-20 * time.Second)}},
			history(rev(1, "a", old), rev(2, "b", old)), 0, 40 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			to, left := rollBackTo(tc.ud, &tc.st, tc.rv, now)
			if to != tc.to || left != tc.waitLeft {
				t.Errorf("rollBackTo = %d, %v; want %d, %v", to, left, tc.to, tc.waitLeft)
			}
		})
	}
}

// TestRevisionStatus: the status says the spec's revision, the one each
// service runs once rolled out, the last that ran, and the rollback.
func TestRevisionStatus(t *testing.T) {
	ud := MakeUserDeployment("shop", "team").
		Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
		Service("api", "api:1", 80, schedv1.ExposureInternal).Obj()
	ud.Generation = 3
	ud.Status = schedv1.UserDeploymentStatus{ObservedGeneration: 2, CurrentRevision: 1, LastRunningRevision: 1,
		Services: []schedv1.ServiceStatus{{Name: "web", Revision: 1}, {Name: "api", Revision: 1}}}
	p := buildPlan(ud, Settings{}, apis{})
	rolling := deployment("web", 1, 0)
	rolling.Status.UpdatedReplicas = 0

	// Revision 2: api's template is the same, so it runs it at once; web
	// rolls out.
	created := testNow.Add(-time.Minute).Truncate(time.Second)
	st := computeStatus(ud, p, observed{now: testNow, currentRevision: 2, runRevision: 2, currentCreated: created,
		deployments: map[string]*appsv1.Deployment{"web": rolling, "api": deployment("api", 1, 1)}})
	got := map[string]int64{}
	for _, s := range st.Services {
		got[s.Name] = s.Revision
	}
	if diff := cmp.Diff(map[string]int64{"web": 1, "api": 2}, got); diff != "" {
		t.Errorf("services' revisions while web rolls out (-want +got):\n%s", diff)
	}
	if st.CurrentRevision != 2 || st.LastRunningRevision != 1 || st.Phase != schedv1.UserDeploymentProgressing {
		t.Errorf("current %d, last running %d, phase %s; want 2, 1, Progressing", st.CurrentRevision, st.LastRunningRevision, st.Phase)
	}
	if st.CurrentRevisionTime == nil || !st.CurrentRevisionTime.Equal(&metav1.Time{Time: created}) {
		t.Errorf("currentRevisionTime %v, want when revision 2 was made, %v", st.CurrentRevisionTime, created)
	}

	// Rolled out: every service runs it, and it is the last that ran.
	ud.Status = st
	st = computeStatus(ud, p, observed{now: testNow, currentRevision: 2, runRevision: 2,
		deployments: map[string]*appsv1.Deployment{"web": deployment("web", 1, 1), "api": deployment("api", 1, 1)}})
	if st.LastRunningRevision != 2 || st.Services[0].Revision != 2 || meta.FindStatusCondition(st.Conditions, schedv1.ConditionRolledBack) != nil {
		t.Errorf("rolled out: %+v", st)
	}

	// A revision that cannot be recorded keeps the last number.
	if st := computeStatus(ud, p, observed{now: testNow}); st.CurrentRevision != 2 {
		t.Errorf("current revision %d when none was recorded, want 2 as before", st.CurrentRevision)
	}

	// Rolled back from 3 to 2, and 2 runs: Running, Ready says so, and
	// the RolledBack condition says why.
	rb := &schedv1.RolledBack{FromRevision: 3, ToRevision: 2, Time: metav1.NewTime(testNow)}
	st = computeStatus(ud, p, observed{now: testNow, currentRevision: 3, runRevision: 2, rolledBack: rb,
		deployments: map[string]*appsv1.Deployment{"web": deployment("web", 1, 1), "api": deployment("api", 1, 1)}})
	ready := meta.FindStatusCondition(st.Conditions, schedv1.ConditionReady)
	rolled := meta.FindStatusCondition(st.Conditions, schedv1.ConditionRolledBack)
	if st.Phase != schedv1.UserDeploymentRunning || st.CurrentRevision != 3 || st.LastRunningRevision != 2 || st.RolledBack != rb {
		t.Errorf("rolled back: %+v", st)
	}
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != schedv1.ReasonRolledBack || !strings.Contains(ready.Message, "running revision 2") {
		t.Errorf("Ready %+v", ready)
	}
	if rolled == nil || rolled.Reason != schedv1.ReasonRolledBack || !strings.Contains(rolled.Message, "revision 3, the spec's, did not become Running within 10m0s") ||
		!strings.Contains(rolled.Message, "kubectl sched rollback shop --to-revision 2") || strings.Contains(rolled.Message, "either") || !rolled.LastTransitionTime.Equal(&rb.Time) {
		t.Errorf("RolledBack %+v", rolled)
	}

	// And 2 does not run either: Degraded, and no further rollback.
	failing := deployment("web", 1, 0)
	st = computeStatus(ud, p, observed{now: testNow, currentRevision: 3, runRevision: 2, rolledBack: rb,
		deployments: map[string]*appsv1.Deployment{"web": withCondition(failing, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: "True", Message: "forbidden: exceeded quota"}),
			"api": deployment("api", 1, 1)}})
	rolled = meta.FindStatusCondition(st.Conditions, schedv1.ConditionRolledBack)
	if st.Phase != schedv1.UserDeploymentDegraded || rolled == nil || !strings.Contains(rolled.Message, "revision 2 does not run either, and is not rolled back further") {
		t.Errorf("the revision rolled back to fails too: phase %s, RolledBack %+v", st.Phase, rolled)
	}
}

// TestRevisionTimeAfterAStop: a revision made while the app was Stopped
// starts its clock when the app starts.
func TestRevisionTimeAfterAStop(t *testing.T) {
	ud := MakeUserDeployment("shop", "team").Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).State(schedv1.StateStopped).Obj()
	made := metav1.NewTime(testNow.Add(-time.Hour).Truncate(time.Second))
	ud.Status = schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentStopped, CurrentRevision: 2, CurrentRevisionTime: &made}
	p := buildPlan(ud, Settings{}, apis{})
	o := observed{now: testNow, currentRevision: 2, runRevision: 2, currentCreated: made.Time,
		deployments: map[string]*appsv1.Deployment{"web": deployment("web", 0, 0)}}
	if st := computeStatus(ud, p, o); !st.CurrentRevisionTime.Equal(&made) {
		t.Errorf("still stopped: currentRevisionTime %v, want %v", st.CurrentRevisionTime, made)
	}
	ud.Spec.State = schedv1.StateRunning
	p = buildPlan(ud, Settings{}, apis{})
	o.deployments = map[string]*appsv1.Deployment{"web": deployment("web", 1, 0)}
	st := computeStatus(ud, p, o)
	if want := metav1.NewTime(testNow).Rfc3339Copy(); st.CurrentRevisionTime == nil || !st.CurrentRevisionTime.Equal(&want) {
		t.Errorf("started: currentRevisionTime %v, want now (%v)", st.CurrentRevisionTime, want)
	}
}

// TestFoldRollback: a rollback rollBackTo decides lands in the computed
// status (the rollback and its condition) with the event that tells it;
// otherwise the status is left as computed.
func TestFoldRollback(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	old := now.Add(-2 * time.Minute)
	ud := MakeUserDeployment("shop", "team").Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Rollback = schedv1.RollbackOnDegraded
			s.ProgressDeadline = &metav1.Duration{Duration: time.Minute}
		}).Obj()
	ready := metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: schedv1.ReasonCrashLoop, Message: "web: crash looping"}
	failing := schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentDegraded, LastRunningRevision: 1, Conditions: []metav1.Condition{ready}}
	past := revisions{history: []*appsv1.ControllerRevision{rev(1, "a", old), rev(2, "b", old)}}
	past.current = past.history[1]
	recent := revisions{history: []*appsv1.ControllerRevision{rev(1, "a", old), rev(2, "b", now.Add(-20*time.Second))}}
	recent.current = recent.history[1]

	t.Run("past the deadline", func(t *testing.T) {
		st, ev, wait := foldRollback(ud, failing, past, now)
		want := &schedv1.RolledBack{FromRevision: 2, ToRevision: 1, Time: metav1.NewTime(now)}
		if diff := cmp.Diff(want, st.RolledBack); diff != "" {
			t.Errorf("rolledBack (-want +got):\n%s", diff)
		}
		if c := meta.FindStatusCondition(st.Conditions, schedv1.ConditionRolledBack); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("RolledBack condition = %+v, want True", c)
		}
		if len(failing.Conditions) != 1 {
			t.Errorf("the computed status's conditions were changed in place: %+v", failing.Conditions)
		}
		wantEv := &note{typ: "Warning", reason: schedv1.ReasonRolledBack, action: "RollBack",
			message: "revision 2 did not become Running within 1m0s (spec.progressDeadline): web: crash looping; rolled back to revision 1, the last that did"}
		if diff := cmp.Diff(wantEv, ev, cmp.AllowUnexported(note{})); diff != "" {
			t.Errorf("event (-want +got):\n%s", diff)
		}
		if wait != 0 {
			t.Errorf("wait = %v, want 0", wait)
		}
	})
	t.Run("within the deadline", func(t *testing.T) {
		st, ev, wait := foldRollback(ud, failing, recent, now)
		if diff := cmp.Diff(failing, st); diff != "" {
			t.Errorf("status changed (-want +got):\n%s", diff)
		}
		if ev != nil || wait != 40*time.Second {
			t.Errorf("event %+v, wait %v; want none and 40s", ev, wait)
		}
	})
}
