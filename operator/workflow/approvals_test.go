package workflow

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// released is an earlier attempt that ended as given: each step's phase
// by name; an approval step that Succeeded was approved by approver.
func released(wf *schedv1.Workflow, approver string, phases map[string]schedv1.StepPhase) *schedv1.Workflow {
	prev := wf.DeepCopy()
	prev.Name = "rel-old"
	prev.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed}
	for _, step := range prev.Spec.Steps {
		s := schedv1.StepStatus{Name: step.Name, Phase: phases[step.Name]}
		if s.Phase == schedv1.StepSucceeded {
			s.StartTime, s.CompletionTime = &t0, &t0
			s.Outputs = map[string]string{"image": "reg/app:1"}
			if step.Approval != nil {
				s.Reason, s.Message = schedv1.ReasonApproved, "approved by "+approver
				s.Outputs = map[string]string{OutputApprovedBy: approver}
			}
		}
		prev.Status.Steps = append(prev.Status.Steps, s)
	}
	return prev
}

// TestRetryReusesAnApprovalOnlyForWhatItApproved: a retry reuses the
// earlier attempt's approval only when the steps it let run, the steps
// those read from and the params are unchanged, and the approver is not
// the retry's requester where that is forbidden; otherwise the approval
// step asks again, and the steps after it that had succeeded run again.
func TestRetryReusesAnApprovalOnlyForWhatItApproved(t *testing.T) {
	seq := func() *WorkflowWrapper {
		return MakeWorkflow("rel", "ns").Param("env", "prod").Step("build", "b:1").Approval("gate", "ship?").
			Step("deploy", "d:1", "${steps.build.output.image}").Step("smoke", "s:1")
	}
	ok, failed := schedv1.StepSucceeded, schedv1.StepFailed
	seqPrev := released(seq().RequestedBy("alice").Obj(), "bob", map[string]schedv1.StepPhase{"build": ok, "gate": ok, "deploy": ok, "smoke": failed})
	// deploy waits for the gate and for lint, which the gate does not wait for.
	dag := func() *WorkflowWrapper {
		return MakeWorkflow("rel", "ns").Step("build", "b:1").Step("lint", "l:1").
			Approval("gate", "ship?").DependsOn("build").
			Step("deploy", "d:1").DependsOn("gate", "lint").
			Step("docs", "x:1").DependsOn("build")
	}
	dagPrev := released(dag().Obj(), "bob", map[string]schedv1.StepPhase{"build": ok, "lint": ok, "gate": ok, "deploy": ok, "docs": failed})

	// A task step named gate whose pod wrote approvedBy=bob: no approval.
	forged := released(MakeWorkflow("rel", "ns").Param("env", "prod").Step("build", "b:1").Step("gate", "x:1").
		Step("deploy", "d:1", "${steps.build.output.image}").Step("smoke", "s:1").Obj(), "", map[string]schedv1.StepPhase{"build": ok, "gate": ok, "deploy": ok, "smoke": failed})
	forged.Status.Steps[1].Outputs = map[string]string{OutputApprovedBy: "bob"}

	cases := map[string]struct {
		prev  *schedv1.Workflow
		retry *WorkflowWrapper
		from  string
		rules approvalRules
		want  summary
		// wantGate is the gate's message ("" for the reused approval's).
		wantGate string
	}{
		"unchanged: the approval is reused and only smoke runs": {
			prev: seqPrev, retry: seq(), from: "smoke",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "3/4",
				Steps: []string{"build=Succeeded", "gate=Succeeded", "deploy=Succeeded", "smoke=Pending"}, Create: "rel-3-smoke"},
		},
		"the deploy step changed: the gate asks again, and deploy runs again after it": {
			prev: seqPrev, retry: seq(), from: "smoke",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonWaitingForApproval, Progress: "1/4",
				Steps: []string{"build=Succeeded", "gate=WaitingForApproval", "deploy=Waiting", "smoke=Waiting"}},
			wantGate: "ship? (waiting for approval: kubectl sched workflow approve rel gate (or deny)); the approval by bob in workflow rel-old is not reused: " +
				"step deploy changed since (an approval covers the steps that depend on its step, the steps those read from and the params)",
		},
		"a step added after the gate": {
			prev: seqPrev, retry: seq().Step("exfiltrate", "evil:1"), from: "smoke",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonWaitingForApproval, Progress: "1/5",
				Steps: []string{"build=Succeeded", "gate=WaitingForApproval", "deploy=Waiting", "smoke=Waiting", "exfiltrate=Waiting"}},
			wantGate: "ship? (waiting for approval: kubectl sched workflow approve rel gate (or deny)); the approval by bob in workflow rel-old is not reused: " +
				"step exfiltrate changed since (an approval covers the steps that depend on its step, the steps those read from and the params)",
		},
		"a param changed": {
			prev: seqPrev, retry: seq().Param("env", "staging"), from: "smoke",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonWaitingForApproval, Progress: "1/4",
				Steps: []string{"build=Succeeded", "gate=WaitingForApproval", "deploy=Waiting", "smoke=Waiting"}},
			wantGate: "ship? (waiting for approval: kubectl sched workflow approve rel gate (or deny)); the approval by bob in workflow rel-old is not reused: " +
				"the params changed since (an approval covers the steps that depend on its step, the steps those read from and the params)",
		},
		"new approvers on the gate": {
			prev: seqPrev, retry: seq(), from: "smoke",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonWaitingForApproval, Progress: "1/4",
				Steps: []string{"build=Succeeded", "gate=WaitingForApproval", "deploy=Waiting", "smoke=Waiting"}},
			wantGate: "ship? (waiting for approval by carol: kubectl sched workflow approve rel gate (or deny)); the approval by bob in workflow rel-old is not reused: " +
				"step gate changed since (an approval covers the steps that depend on its step, the steps those read from and the params)",
		},
		"the approver asked for the retry, where that is forbidden": {
			prev: seqPrev, retry: seq().RequestedBy("bob"), from: "smoke", rules: approvalRules{forbidSelf: true},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonWaitingForApproval, Progress: "1/4",
				Steps: []string{"build=Succeeded", "gate=WaitingForApproval", "deploy=Waiting", "smoke=Waiting"}},
			wantGate: "ship? (waiting for approval: kubectl sched workflow approve rel gate (or deny)); the approval by bob in workflow rel-old is not reused: " +
				"bob asked for this run (spec.requestedBy), and this cluster forbids approving one's own run",
		},
		"someone else asked for the retry, where self-approval is forbidden": {
			prev: seqPrev, retry: seq().RequestedBy("alice"), from: "smoke", rules: approvalRules{forbidSelf: true},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "3/4",
				Steps: []string{"build=Succeeded", "gate=Succeeded", "deploy=Succeeded", "smoke=Pending"}, Create: "rel-3-smoke"},
		},
		"the earlier attempt's step ran a task that output approvedBy": {
			prev: forged, retry: seq(), from: "smoke",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonWaitingForApproval, Progress: "1/4",
				Steps: []string{"build=Succeeded", "gate=WaitingForApproval", "deploy=Waiting", "smoke=Waiting"}},
			wantGate: "ship? (waiting for approval: kubectl sched workflow approve rel gate (or deny)); step gate was not approved in workflow rel-old; it waits for a decision",
		},
		"side by side, a changed branch the gate does not reach keeps the approval": {
			prev: dagPrev, retry: dag(), from: "docs",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "4/5",
				Steps: []string{"build=Succeeded", "lint=Succeeded", "gate=Succeeded", "deploy=Succeeded", "docs=Pending"}, Create: "rel-4-docs"},
		},
		"side by side, a changed step that the gated step reads from asks again": {
			prev: dagPrev, retry: dag(), from: "docs",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "2/5",
				Steps: []string{"build=Succeeded", "lint=Succeeded", "gate=WaitingForApproval", "deploy=Waiting", "docs=Pending"}, Create: "rel-4-docs"},
			wantGate: "ship? (waiting for approval: kubectl sched workflow approve rel gate (or deny)); the approval by bob in workflow rel-old is not reused: " +
				"step lint changed since (an approval covers the steps that depend on its step, the steps those read from and the params)",
		},
		"one after another instead of side by side": {
			prev: dagPrev, retry: MakeWorkflow("rel", "ns").Step("build", "b:1").Step("lint", "l:1").Approval("gate", "ship?").Step("deploy", "d:1").Step("docs", "x:1"),
			from: "docs",
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonWaitingForApproval, Progress: "2/5",
				Steps: []string{"build=Succeeded", "lint=Succeeded", "gate=WaitingForApproval", "deploy=Waiting", "docs=Waiting"}},
			wantGate: "ship? (waiting for approval: kubectl sched workflow approve rel gate (or deny)); the approval by bob in workflow rel-old is not reused: " +
				"step deploy, step docs, step gate, step lint changed since (an approval covers the steps that depend on its step, the steps those read from and the params)",
		},
	}
	edits := map[string]func(*schedv1.WorkflowSpec){
		"the deploy step changed: the gate asks again, and deploy runs again after it": func(s *schedv1.WorkflowSpec) {
			s.Steps[2].Task.Image = "evil:1"
		},
		"new approvers on the gate": func(s *schedv1.WorkflowSpec) {
			s.Steps[1].Approval.Approvers = &schedv1.Approvers{Users: []string{"carol"}}
		},
		"side by side, a changed branch the gate does not reach keeps the approval": func(s *schedv1.WorkflowSpec) {
			s.Steps[4].Task.Image = "other:1"
		},
		"side by side, a changed step that the gated step reads from asks again": func(s *schedv1.WorkflowSpec) {
			s.Steps[1].Task.Image = "l:2"
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wf := tc.retry.Obj()
			wf.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: tc.prev.Name, FromStep: tc.from}
			if edit := edits[name]; edit != nil {
				edit(&wf.Spec)
			}
			p := decide(wf, nil, nil, tc.prev, tc.rules, now)
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			gate := p.status.Steps[slicesIndex(wf, "gate")]
			if tc.wantGate == "" {
				if gate.Outputs[OutputApprovedBy] != "bob" || gate.Reason != schedv1.ReasonApproved || gate.Message != "reused from workflow rel-old: approved by bob" {
					t.Errorf("gate %+v, want bob's approval reused", gate)
				}
				return
			}
			if gate.Message != tc.wantGate || gate.Outputs != nil {
				t.Errorf("gate message %q (outputs %v), want\n%q", gate.Message, gate.Outputs, tc.wantGate)
			}

			// Decided once: the earlier attempt may go now, and the
			// retry goes on waiting, with nothing else reused.
			wf.Status = p.status
			tasks := map[int]*schedv1.AgentTask{}
			for _, c := range p.creates {
				tasks[c.step] = c.task
			}
			again := decide(wf, tasks, nil, nil, tc.rules, now)
			if diff := cmp.Diff(summarize(p).Steps, summarize(again).Steps); diff != "" || again.status.Phase != schedv1.WorkflowRunning {
				t.Errorf("after the earlier attempt went: %s (-before +after):\n%s", again.status.Phase, diff)
			}
		})
	}
}

func slicesIndex(wf *schedv1.Workflow, step string) int {
	for i, s := range wf.Spec.Steps {
		if s.Name == step {
			return i
		}
	}
	return -1
}

// TestSelfApprovalDoesNotCount: where approving one's own run is
// forbidden, an approval recorded by the run's requester (past the
// admission policy, which an install may lack) fails the step with reason
// SelfApproved, and so the workflow; so does any approval of a run that
// does not say who asked for it. Someone else's approval counts, and a
// requester may still deny.
func TestSelfApprovalDoesNotCount(t *testing.T) {
	forbid := approvalRules{forbidSelf: true}
	cases := map[string]struct {
		wf        *schedv1.Workflow
		rules     approvalRules
		wantSteps []string
		wantMsg   string
		wantWF    string
	}{
		"the requester approves": {
			wf: gated().RequestedBy("alice").Decide("gate", schedv1.Approved, "alice", "").Obj(), rules: forbid,
			wantSteps: []string{"build=Succeeded", "gate=Failed", "ship=Skipped"},
			wantMsg:   "the approval by alice does not count: alice asked for this run (spec.requestedBy), and this cluster forbids approving one's own run",
			wantWF:    schedv1.ReasonSelfApproved,
		},
		"no requester recorded": {
			wf: gated().Decide("gate", schedv1.Approved, "bob", "").Obj(), rules: forbid,
			wantSteps: []string{"build=Succeeded", "gate=Failed", "ship=Skipped"},
			wantMsg:   "the approval by bob does not count: the workflow does not say who asked for it (spec.requestedBy), and this cluster forbids approving one's own run",
			wantWF:    schedv1.ReasonSelfApproved,
		},
		"someone else approves": {
			wf: gated().RequestedBy("alice").Decide("gate", schedv1.Approved, "bob", "").Obj(), rules: forbid,
			wantSteps: []string{"build=Succeeded", "gate=Succeeded", "ship=Pending"},
			wantMsg:   "approved by bob",
			wantWF:    schedv1.ReasonRunning,
		},
		"the requester denies": {
			wf: gated().RequestedBy("alice").Decide("gate", schedv1.Denied, "alice", "not yet").Obj(), rules: forbid,
			wantSteps: []string{"build=Succeeded", "gate=Failed", "ship=Skipped"},
			wantMsg:   "denied by alice: not yet",
			wantWF:    schedv1.ReasonDenied,
		},
		"allowed by the cluster": {
			wf:        gated().RequestedBy("alice").Decide("gate", schedv1.Approved, "alice", "").Obj(),
			wantSteps: []string{"build=Succeeded", "gate=Succeeded", "ship=Pending"},
			wantMsg:   "approved by alice",
			wantWF:    schedv1.ReasonRunning,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tasks := map[int]*schedv1.AgentTask{0: stepTask(tc.wf, 0, schedv1.TaskSucceeded, nil, "")}
			p := decide(tc.wf, tasks, nil, nil, tc.rules, now)
			got := summarize(p)
			if diff := cmp.Diff(tc.wantSteps, got.Steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if m := p.status.Steps[1].Message; m != tc.wantMsg {
				t.Errorf("gate message %q, want %q", m, tc.wantMsg)
			}
			if p.status.Reason != tc.wantWF {
				t.Errorf("workflow reason %q, want %q (message %q)", p.status.Reason, tc.wantWF, p.status.Message)
			}
		})
	}
}
