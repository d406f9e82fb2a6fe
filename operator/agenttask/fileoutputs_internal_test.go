package agenttask

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/fileoutputs"
)

func TestWithFileOutputs(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC))
	succeededWith := func(outs map[string]string) schedv1.AgentTaskStatus {
		st := schedv1.AgentTaskStatus{Outputs: outs}
		finish(&st, schedv1.TaskSucceeded, schedv1.ReasonSucceeded, "succeeded", now)
		return st
	}
	for name, tc := range map[string]struct {
		st         schedv1.AgentTaskStatus
		outs       map[string]string
		ferr       *fileoutputs.Error
		wantPhase  schedv1.AgentTaskPhase
		wantReason string
		wantIn     string
		wantFiles  map[string]string
	}{
		"files beside the termination message's": {
			st: succeededWith(map[string]string{"sha": "abc"}), outs: map[string]string{"report": strings.Repeat("x", 100<<10)},
			wantPhase: schedv1.TaskSucceeded, wantReason: schedv1.ReasonSucceeded, wantIn: "1 file output(s) of 102400 bytes",
			wantFiles: map[string]string{"report": strings.Repeat("x", 100<<10)},
		},
		"no files": {
			st: succeededWith(nil), wantPhase: schedv1.TaskSucceeded, wantReason: schedv1.ReasonSucceeded, wantIn: "succeeded",
		},
		"a key in both places": {
			st: succeededWith(map[string]string{"sha": "abc"}), outs: map[string]string{"sha": "def"},
			wantPhase: schedv1.TaskFailed, wantReason: schedv1.ReasonOutputsInvalid, wantIn: "output sha is both a file",
		},
		"more than 64 outputs in all": {
			st: succeededWith(map[string]string{"sha": "abc"}), outs: manyOutputs(64),
			wantPhase: schedv1.TaskFailed, wantReason: schedv1.ReasonOutputsInvalid, wantIn: "the task has 65 outputs",
		},
		"the sidecar's refusal": {
			st:        succeededWith(map[string]string{"sha": "abc"}),
			ferr:      &fileoutputs.Error{Reason: schedv1.ReasonOutputsTruncated, Message: "the files hold more than 65536 bytes"},
			wantPhase: schedv1.TaskFailed, wantReason: schedv1.ReasonOutputsTruncated, wantIn: "file outputs are unusable: the files hold more than 65536 bytes",
		},
	} {
		t.Run(name, func(t *testing.T) {
			st := tc.st
			withFileOutputs(&st, tc.outs, tc.ferr, now)
			if st.Phase != tc.wantPhase || st.Reason != tc.wantReason || !strings.Contains(st.Message, tc.wantIn) {
				t.Errorf("status %s %s %q; want %s %s containing %q", st.Phase, st.Reason, st.Message, tc.wantPhase, tc.wantReason, tc.wantIn)
			}
			if diff := cmp.Diff(tc.wantFiles, st.FileOutputs); diff != "" {
				t.Errorf("file outputs (-want +got):\n%s", diff)
			}
			if tc.wantPhase == schedv1.TaskFailed && st.Outputs != nil {
				t.Errorf("a failed task keeps outputs %v: all or none", st.Outputs)
			}
			for _, c := range st.Conditions {
				if c.Type == schedv1.ConditionSucceeded && c.Message != st.Message {
					t.Errorf("condition Succeeded says %q, the status %q", c.Message, st.Message)
				}
			}
		})
	}
}

// The cache keeps file outputs a workflow passes on (4 KiB in all), never
// a big one's bytes.
func TestTrimTaskDropsFileOutputBytes(t *testing.T) {
	for name, tc := range map[string]struct {
		outs, want map[string]string
		held       map[string]int
	}{
		"a MiB": {outs: map[string]string{"report": strings.Repeat("x", 1<<20), "items": `["a"]`},
			held: map[string]int{"report": 1 << 20, "items": 5}},
		"just past 4 KiB":     {outs: map[string]string{"ab": strings.Repeat("x", 4095)}, held: map[string]int{"ab": 4095}},
		"a list within 4 KiB": {outs: map[string]string{"items": `["a","b"]`}, want: map[string]string{"items": `["a","b"]`}},
	} {
		t.Run(name, func(t *testing.T) {
			task := MakeAgentTask("t", "ns").Image("busybox").Obj()
			task.Status.FileOutputs = tc.outs
			got, err := TrimTask(task)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.(*schedv1.AgentTask).Status.FileOutputs); diff != "" {
				t.Errorf("cached file outputs (-want +got):\n%s", diff)
			}
			// Transformed twice, as an informer may: the sizes stay.
			again, err := TrimTask(got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.held, cachetrim.HeldOutputs(again.(*schedv1.AgentTask))); diff != "" {
				t.Errorf("held outputs (-want +got):\n%s", diff)
			}
		})
	}
}

// A task whose spec is near its bound cannot also hold 1 MiB of file
// outputs: refused with the sizes, not a status write that fails forever.
func TestFileOutputsFitTheObject(t *testing.T) {
	r := &Reconciler{}
	big := make([]string, 64)
	for i := range big {
		big[i] = strings.Repeat("a", 4096) // 256 KiB of args
	}
	task := MakeAgentTask("t", "ns").Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) {
		s.Args = big
		s.Command = big[:32]
		for i := range 64 {
			s.Env = append(s.Env, schedv1.EnvVar{Name: fmt.Sprintf("V%d", i), Value: big[i]})
		}
		s.Outputs = &schedv1.TaskOutputs{FromDir: "/out"}
	}).Obj()
	small := map[string]string{"report": strings.Repeat("x", 100<<10)}
	if ferr, err := r.fitsObject(t.Context(), task, small); err != nil || ferr != nil {
		t.Errorf("100 KiB beside a 640 KiB spec: %v %v, want it kept", ferr, err)
	}
	huge := map[string]string{"report": strings.Repeat("x", schedv1.MaxFileOutputBytes)}
	ferr, err := r.fitsObject(t.Context(), task, huge)
	if err != nil || ferr == nil || ferr.Reason != schedv1.ReasonOutputsTruncated || !strings.Contains(ferr.Message, "make the spec smaller") {
		t.Errorf("1 MiB beside a 640 KiB spec: %+v %v, want OutputsTruncated with the sizes", ferr, err)
	}
}

func manyOutputs(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}
