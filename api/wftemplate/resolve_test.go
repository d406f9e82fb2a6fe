package wftemplate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/api/wftemplate"
)

func TestMerge(t *testing.T) {
	hour, day := &metav1.Duration{Duration: time.Hour}, &metav1.Duration{Duration: 24 * time.Hour}
	tmpl := func() *schedv1.WorkflowSpec {
		s := MakeWorkflow("t", "").Param("commit", "main").Param("registry", "reg").
			Step("build", "builder:1", "--commit=${params.commit}").
			Finally("notify", schedv1.AgentTaskSpec{Image: "busybox"}).Obj().Spec
		s.Params[0].Description = "what to build"
		s.Timeout, s.TTLAfterFinished = hour, hour
		s.Workspaces = []schedv1.Workspace{{Name: "src"}}
		return &s
	}
	ref := func() *schedv1.WorkflowTemplateRef {
		return &schedv1.WorkflowTemplateRef{Kind: schedv1.KindWorkflowTemplate, Name: "release"}
	}
	cases := map[string]struct {
		run     schedv1.WorkflowSpec
		want    func(*schedv1.WorkflowSpec)
		wantErr string
	}{
		"defaults": {
			run:  schedv1.WorkflowSpec{WorkflowTemplateRef: ref()},
			want: func(*schedv1.WorkflowSpec) {},
		},
		"the run's params, timeout and what only a run has win": {
			run: schedv1.WorkflowSpec{WorkflowTemplateRef: ref(), Params: []schedv1.WorkflowParam{{Name: "commit", Value: "abc"}},
				Timeout: day, NoCache: true, RequestedBy: "alice", RetryOf: &schedv1.WorkflowRetry{Workflow: "w", FromStep: "build"}, FailFast: true},
			want: func(s *schedv1.WorkflowSpec) {
				s.Params[0].Value, s.Timeout, s.NoCache, s.RequestedBy, s.FailFast = "abc", day, true, "alice", true
				s.RetryOf = &schedv1.WorkflowRetry{Workflow: "w", FromStep: "build"}
			},
		},
		"a param the template does not declare": {
			run:     schedv1.WorkflowSpec{WorkflowTemplateRef: ref(), Params: []schedv1.WorkflowParam{{Name: "comit", Value: "abc"}, {Name: "x", Value: "y"}}},
			wantErr: "spec.params: comit, x are not params of WorkflowTemplate/release, which declares commit, registry: set only those (kubectl sched template list shows them)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := wftemplate.Merge(tmpl(), &tc.run, "WorkflowTemplate/release", "u-1", "42")
			if tc.wantErr != "" {
				var e *wftemplate.Error
				if !errors.As(err, &e) || e.Reason != schedv1.ReasonInvalidParams || e.Wait || e.Message != tc.wantErr {
					t.Fatalf("err %v; want InvalidParams %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := *tmpl()
			want.WorkflowTemplateRef = &schedv1.WorkflowTemplateRef{Kind: schedv1.KindWorkflowTemplate, Name: "release", UID: "u-1", ResourceVersion: "42"}
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The template is copied, not shared.
	tm := tmpl()
	got, _ := wftemplate.Merge(tm, &schedv1.WorkflowSpec{WorkflowTemplateRef: ref()}, "x", "u", "1")
	got.Steps[0].Name = "changed"
	if tm.Steps[0].Name != "build" {
		t.Error("Merge shares the template's steps with the run")
	}
}
