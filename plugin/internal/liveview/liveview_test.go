package liveview

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mattn/go-runewidth"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

var t0 = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)

// clock is a settable clock for the view.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// states is a three-step workflow going through a run that fails at step 1.
func states() []State {
	base := func() State {
		return State{Name: "demo", Phase: schedv1.WorkflowPending, Created: t0, Steps: []Step{
			{Name: "build", Phase: schedv1.StepWaiting},
			{Name: "test", Phase: schedv1.StepWaiting},
			{Name: "deploy", Phase: schedv1.StepWaiting},
		}}
	}
	s1 := base()
	s1.Phase, s1.Start = schedv1.WorkflowRunning, t0
	s1.Steps[0] = Step{Name: "build", TaskName: "demo-0-build", Phase: schedv1.StepRunning, Start: t0}

	s2 := s1
	s2.Steps = append([]Step(nil), s1.Steps...)
	s2.Steps[0] = Step{Name: "build", TaskName: "demo-0-build", Phase: schedv1.StepSucceeded, Start: t0, End: t0.Add(5 * time.Second),
		Outputs: map[string]string{"image": "registry.example/app:1.0", "digest": "sha256:" + strings.Repeat("ab", 32)}}
	s2.Steps[1] = Step{Name: "test", TaskName: "demo-1-test", Phase: schedv1.StepRunning, Start: t0.Add(5 * time.Second)}

	s3 := s2
	s3.Steps = append([]Step(nil), s2.Steps...)
	s3.Phase, s3.End, s3.Message = schedv1.WorkflowFailed, t0.Add(9*time.Second), "step 1 (test) failed: exit code 3: 2 tests failed"
	s3.Steps[1] = Step{Name: "test", TaskName: "demo-1-test", Phase: schedv1.StepFailed, Start: t0.Add(5 * time.Second), End: t0.Add(9 * time.Second),
		Message: "exit code 3: 2 tests failed"}
	s3.Steps[2] = Step{Name: "deploy", Phase: schedv1.StepSkipped, Message: "step test did not succeed"}
	return []State{base(), s1, s2, s3}
}

func TestAppendModeWritesOneLinePerChangeAndNoEscapes(t *testing.T) {
	var out bytes.Buffer
	c := &clock{now: t0}
	v := New(&out, false, 0, c.Now)
	ss := states()
	for i, s := range ss[:3] {
		c.now = t0.Add(time.Duration(i) * time.Second)
		v.Update(s)
		v.Update(s) // the same state again adds nothing
		v.Tick()
	}
	v.Log("test | running 12 tests")
	c.now = t0.Add(9 * time.Second)
	v.Finish(ss[3])

	want := `12:00:00 workflow demo Pending 0/3 steps
12:00:01 workflow demo Running 0/3 steps
12:00:01 step 0 build Running
12:00:02 step 0 build Succeeded in 5s
12:00:02 step 0 build output digest=sha256:abababababababababababababababab…
12:00:02 step 0 build output image=registry.example/app:1.0
12:00:02 step 1 test Running
test | running 12 tests
12:00:09 step 1 test Failed in 4s: exit code 3: 2 tests failed
12:00:09 step 2 deploy Skipped: step test did not succeed
12:00:09 workflow demo Failed 1/3 steps
Workflow demo Failed after 9s (1/3 steps): step 1 (test) failed: exit code 3: 2 tests failed
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("appended lines (-want +got):\n%s", diff)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("escape codes outside a terminal")
	}
}

func TestTerminalModeRedrawsOnlyOnChange(t *testing.T) {
	var out bytes.Buffer
	c := &clock{now: t0}
	v := New(&out, true, 0, c.Now)
	ss := states()

	v.Update(ss[1])
	first := out.String()
	if !strings.Contains(first, "\x1b[36mRunning") {
		t.Errorf("a terminal gets colours:\n%q", first)
	}
	if strings.Contains(first, "\x1b[J") {
		t.Errorf("nothing to clear before the first frame:\n%q", first)
	}
	if got, want := plain(first), `Workflow demo  Running  0s  0/3 steps
  #  STEP    PHASE    DURATION  DETAILS
  0  build   Running  0s
  1  test    Waiting
  2  deploy  Waiting
`; got != want {
		t.Errorf("first frame:\n%s\nwant:\n%s", got, want)
	}

	// Events and ticks that change nothing visible write nothing.
	out.Reset()
	v.Update(ss[1])
	v.Tick()
	if out.Len() != 0 {
		t.Errorf("redrew an unchanged view: %q", out.String())
	}

	// The clock moving changes the durations: one redraw in place.
	c.now = t0.Add(3 * time.Second)
	v.Tick()
	frame := out.String()
	if !strings.HasPrefix(frame, "\x1b[5A\r\x1b[J") {
		t.Errorf("a redraw moves up over the 5 lines and clears them: %q", frame)
	}
	if strings.Count(frame, "\x1b[J") != 1 || !strings.Contains(plain(frame), "Running  3s  0/3 steps") {
		t.Errorf("want one redraw with the new time: %q", frame)
	}

	// A log line goes above the view, which is drawn again below it.
	out.Reset()
	v.Log("build | compiling")
	if got := out.String(); !strings.HasPrefix(got, "\x1b[5A\r\x1b[Jbuild | compiling\n") || !strings.HasSuffix(got, frameOf(v)) {
		t.Errorf("log line: %q", got)
	}

	// Outputs and failures appear in the rows.
	out.Reset()
	c.now = t0.Add(9 * time.Second)
	v.Finish(ss[3])
	got := plain(out.String())
	for _, want := range []string{
		"0  build   Succeeded  5s        digest=sha256:abababababababababababababababab… image=registry.example/app:1.0",
		"1  test    Failed     4s        exit code 3: 2 tests failed",
		"2  deploy  Skipped              step test did not succeed",
		"Workflow demo Failed after 9s (1/3 steps): step 1 (test) failed: exit code 3: 2 tests failed\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("final view lacks %q:\n%s", want, got)
		}
	}
	// After Finish nothing is redrawn.
	out.Reset()
	c.now = t0.Add(time.Hour)
	v.Tick()
	v.Log("late line")
	if out.String() != "late line\n" {
		t.Errorf("after Finish: %q", out.String())
	}
}

func TestTerminalLinesFitTheWidth(t *testing.T) {
	var out bytes.Buffer
	v := New(&out, true, 40, (&clock{now: t0}).Now)
	for _, s := range states() {
		v.Update(s)
	}
	for line := range strings.SplitSeq(plain(out.String()), "\n") {
		if n := utf8.RuneCountInString(line); n >= 40 {
			t.Errorf("line of %d characters wraps a 40-column terminal: %q", n, line)
		}
	}
}

func TestStateOf(t *testing.T) {
	start := metav1.NewTime(t0)
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", CreationTimestamp: metav1.NewTime(t0.Add(-time.Second))},
		Spec: schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{
			{Name: "a", Task: schedv1.AgentTaskSpec{Image: "x"}}, {Name: "b", Task: schedv1.AgentTaskSpec{Image: "x"}},
		}},
		Status: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, StartTime: &start, Steps: []schedv1.StepStatus{
			{Name: "a", Phase: schedv1.StepFailed, TaskName: "demo-0-a", StartTime: &start, Message: "line one\nline two"},
			{Name: "b", Phase: schedv1.StepSkipped, Message: "skipped: step a did not succeed"},
		}},
	}
	want := State{Name: "demo", Phase: schedv1.WorkflowRunning, Created: t0.Add(-time.Second), Start: t0, Steps: []Step{
		{Name: "a", TaskName: "demo-0-a", Phase: schedv1.StepFailed, Start: t0, Message: "line one line two"},
		{Name: "b", Phase: schedv1.StepSkipped, Message: "step a did not succeed"},
	}}
	if diff := cmp.Diff(want, StateOf(wf)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := StateOf(&schedv1.Workflow{}).Phase; got != schedv1.WorkflowPending {
		t.Errorf("a workflow the operator has not seen is Pending, got %q", got)
	}
}

func TestSummary(t *testing.T) {
	cases := map[string]struct {
		state State
		want  string
	}{
		"succeeded": {
			state: State{Name: "w", Phase: schedv1.WorkflowSucceeded, Start: t0, End: t0.Add(65 * time.Second),
				Steps: []Step{{Phase: schedv1.StepSucceeded}, {Phase: schedv1.StepSucceeded}}},
			want: "Workflow w Succeeded in 1m05s (2/2 steps)",
		},
		"timed out": {
			state: State{Name: "w", Phase: schedv1.WorkflowTimeout, Start: t0, End: t0.Add(30 * time.Second), Message: "ran past spec.timeout 30s",
				Steps: []Step{{Phase: schedv1.StepTimeout}}},
			want: "Workflow w timed out after 30s (0/1 steps): ran past spec.timeout 30s",
		},
		"failed without a workflow message names the step": {
			state: State{Name: "w", Phase: schedv1.WorkflowFailed, Created: t0, End: t0.Add(2 * time.Hour),
				Steps: []Step{{Name: "a", Phase: schedv1.StepSucceeded}, {Name: "b", Phase: schedv1.StepFailed, Message: "OOMKilled"}}},
			want: "Workflow w Failed after 2h00m (1/2 steps): step 1 (b) Failed: OOMKilled",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Summary(tc.state)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

func plain(s string) string { return ansi.ReplaceAllString(strings.ReplaceAll(s, "\r", ""), "") }

func frameOf(v *View) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.frame
}

// TestWideCharactersFitTheWidth: outputs and messages in CJK and emoji take
// two columns each; the rows must still fit the terminal and stay aligned,
// or the in-place redraw breaks.
func TestWideCharactersFitTheWidth(t *testing.T) {
	s := states()[3]
	s.Steps[0].Outputs = map[string]string{"note": "ビルド完了しました🚀 すべてのテストに合格", "tag": "v1"}
	s.Steps[1].Message = "失敗: 2 件のテストが失敗しました 💥💥💥 詳細はログを参照"
	var out bytes.Buffer
	v := New(&out, true, 50, (&clock{now: t0.Add(time.Minute)}).Now)
	v.Update(s)
	got := plain(out.String())
	want := `Workflow demo  Failed  9s  1/3 steps
  #  STEP    PHASE      DURATION  DETAILS
  0  build   Succeeded  5s        note=ビルド完…
  1  test    Failed     4s        失敗: 2 件のテ…
  2  deploy  Skipped              step test did …
`
	if !strings.HasSuffix(got, want) {
		t.Errorf("view (-want +got):\n%s", cmp.Diff(want, got))
	}
	for line := range strings.SplitSeq(strings.TrimSpace(got), "\n") {
		if w := runewidth.StringWidth(line); w >= 50 {
			t.Errorf("line of %d columns wraps a 50-column terminal: %q", w, line)
		}
	}
}

// A DAG shows what each step waits for: an AFTER column on a terminal, and
// "(after ...)" where a branch starts in the line-per-change view.
func TestBranchesShowWhatTheyWaitFor(t *testing.T) {
	s := State{Name: "checks", Phase: schedv1.WorkflowRunning, Created: t0, Start: t0, Steps: []Step{
		{Name: "fetch", Phase: schedv1.StepSucceeded, Start: t0, End: t0.Add(time.Second), Outputs: map[string]string{"sha": "4f2a"}},
		{Name: "lint", Phase: schedv1.StepRunning, Start: t0.Add(time.Second), After: []string{"fetch"}},
		{Name: "test", Phase: schedv1.StepRunning, Start: t0.Add(time.Second), After: []string{"fetch"}},
		{Name: "ship", Phase: schedv1.StepWaiting, After: []string{"lint", "test"}},
	}}
	var out bytes.Buffer
	New(&out, true, 0, (&clock{now: t0.Add(3 * time.Second)}).Now).Update(s)
	want := `Workflow checks  Running  3s  1/4 steps
  #  STEP   AFTER      PHASE      DURATION  DETAILS
  0  fetch             Succeeded  1s        sha=4f2a
  1  lint   fetch      Running    2s
  2  test   fetch      Running    2s
  3  ship   lint,test  Waiting
`
	if diff := cmp.Diff(want, plain(out.String())); diff != "" {
		t.Errorf("terminal view (-want +got):\n%s", diff)
	}

	out.Reset()
	v := New(&out, false, 0, (&clock{now: t0}).Now)
	v.Update(s)
	for _, line := range []string{"step 1 lint (after fetch) Running\n", "step 2 test (after fetch) Running\n"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("line view lacks %q:\n%s", line, out.String())
		}
	}
	if strings.Contains(out.String(), "ship") {
		t.Errorf("a waiting step has no line yet:\n%s", out.String())
	}
	out.Reset()
	next := s
	next.Steps = append([]Step(nil), s.Steps...)
	next.Steps[1].Phase = schedv1.StepSucceeded
	v.Update(next)
	if got := out.String(); !strings.Contains(got, "step 1 lint Succeeded") || strings.Contains(got, "after") {
		t.Errorf("the dependencies are said once, where the step starts:\n%s", got)
	}
}

// A step's container writes its outputs and message: on a terminal the
// view draws them with no escape but its own (cursor up, clear, colour),
// and in a pipe with none at all.
func TestViewShowsContainerTextEscaped(t *testing.T) {
	const hostile = "x\x1b]52;c;cHduZWQ=\x07\x1b[2J\rFAKE\x08\u009b31m\u202eevil\nnext"
	now := metav1.NewTime(t0)
	wf := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "demo", CreationTimestamp: now},
		Spec: schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{{Name: "build"}, {Name: "ship"}}},
		Status: schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, Message: hostile, StartTime: &now, CompletionTime: &now, Steps: []schedv1.StepStatus{
			{Name: "build", Phase: schedv1.StepSucceeded, StartTime: &now, CompletionTime: &now, Outputs: map[string]string{"image": hostile}},
			{Name: "ship", Phase: schedv1.StepFailed, StartTime: &now, CompletionTime: &now, Message: hostile},
		}}}
	ours := regexp.MustCompile(`\x1b\[(\d+A\r\x1b\[J|\d+m)`)
	for _, tty := range []bool{true, false} {
		var out bytes.Buffer
		v := New(&out, tty, 120, func() time.Time { return t0 })
		v.Update(StateOf(wf))
		v.Log("build | " + hostile)
		v.Finish(StateOf(wf))
		got := out.String()
		if !tty && strings.Contains(got, "\x1b") {
			t.Errorf("pipe: an escape in %q", got)
		}
		rest := ours.ReplaceAllString(got, "")
		for _, r := range rest {
			if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\u202e' {
				t.Errorf("tty=%v: control %U reaches the terminal:\n%q", tty, r, got)
				break
			}
		}
		if !strings.Contains(rest, "x^[]52;c;cHduZWQ=^G^[[2J") {
			t.Errorf("tty=%v: want the text shown escaped:\n%q", tty, got)
		}
	}
}

// A DAG's columns before DETAILS can be wider than the terminal on their
// own (long step names, in STEP and again in AFTER): every column is cut
// to fit, or the lines wrap and the redraw breaks.
func TestLongStepNamesFitTheWidth(t *testing.T) {
	const (
		fetch = "fetch-sources-from-the-monorepo"
		build = "build-the-container-image-for-every-platform"
		ship  = "publish-to-every-registry-mirror"
	)
	s := State{Name: "release-pipeline-for-the-storefront", Phase: schedv1.WorkflowRunning, Created: t0, Start: t0, Steps: []Step{
		{Name: fetch, Phase: schedv1.StepSucceeded, Start: t0, End: t0.Add(time.Second), Outputs: map[string]string{"sha": "4f2a9c0e"}},
		{Name: build, Phase: schedv1.StepRunning, Start: t0.Add(time.Second), After: []string{fetch}},
		{Name: ship, Phase: schedv1.StepWaiting, After: []string{build, fetch}},
	}}
	var out bytes.Buffer
	New(&out, true, 40, (&clock{now: t0.Add(3 * time.Second)}).Now).Update(s)
	got := plain(out.String())
	for line := range strings.SplitSeq(strings.TrimSuffix(got, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > 40 {
			t.Errorf("line of %d runes exceeds 40: %q", n, line)
		}
		// The last column is left free too: a line that fills it moves
		// the cursor on, and the redraw no longer counts right.
		if w := runewidth.StringWidth(line); w >= 40 {
			t.Errorf("line of %d columns reaches the edge of a 40-column terminal: %q", w, line)
		}
	}
	// The long columns are cut, not left out.
	if !strings.Contains(got, "  1  build…  fetc…") {
		t.Errorf("want step 1's name and what it waits for, cut:\n%s", got)
	}
}

// gatedStates: test, a conditional deploy (false), an approval gate, and a
// finally step; suspended, approved, resumed, then done.
func gatedStates() []State {
	wf := func(phase schedv1.WorkflowPhase, suspended bool, gate Step, notify Step) State {
		return State{Name: "rel", Phase: phase, Created: t0, Start: t0, Suspended: suspended, Steps: []Step{
			{Name: "test", Phase: schedv1.StepSucceeded, Start: t0, End: t0.Add(2 * time.Second), Outputs: map[string]string{"result": "passed"}},
			{Name: "canary", Phase: schedv1.StepSkipped, Message: `when "params.channel == 'canary'" was false`},
			gate,
		}, Finally: []Step{notify}}
	}
	waiting := Step{Name: "gate", Phase: schedv1.StepWaitingForApproval, Start: t0.Add(2 * time.Second),
		Message: "ship it? (waiting for approval: kubectl sched workflow approve rel gate (or deny))"}
	approved := Step{Name: "gate", Phase: schedv1.StepSucceeded, Start: t0.Add(2 * time.Second), End: t0.Add(4 * time.Second),
		Message: "approved by alice", Outputs: map[string]string{"approvedBy": "alice"}}
	notifyWaiting := Step{Name: "notify", Phase: schedv1.StepWaiting}
	notifyRunning := Step{Name: "notify", TaskName: "rel-finally0-notify", Phase: schedv1.StepRunning, Start: t0.Add(4 * time.Second)}
	notifyDone := Step{Name: "notify", TaskName: "rel-finally0-notify", Phase: schedv1.StepSucceeded, Start: t0.Add(4 * time.Second), End: t0.Add(5 * time.Second),
		Outputs: map[string]string{"sent": "Succeeded"}}
	done := wf(schedv1.WorkflowSucceeded, false, approved, notifyDone)
	done.End = t0.Add(5 * time.Second)
	return []State{
		wf(schedv1.WorkflowRunning, false, waiting, notifyWaiting),
		wf(schedv1.WorkflowRunning, true, waiting, notifyWaiting),
		wf(schedv1.WorkflowRunning, true, approved, notifyWaiting),
		wf(schedv1.WorkflowRunning, false, approved, notifyRunning),
		done,
	}
}

// TestViewShowsGatesAndFinally: a skipped step with its reason, a step
// waiting for approval with the command to give it, suspension and
// resumption, and the finally steps in their own lines and section.
func TestViewShowsGatesAndFinally(t *testing.T) {
	ss := gatedStates()
	var out bytes.Buffer
	c := &clock{now: t0}
	v := New(&out, false, 0, c.Now)
	for _, s := range ss[:len(ss)-1] {
		v.Update(s)
	}
	v.Finish(ss[len(ss)-1])
	want := `12:00:00 workflow rel Running 1/3 steps
12:00:00 step 0 test Succeeded in 2s
12:00:00 step 0 test output result=passed
12:00:00 step 1 canary Skipped: when "params.channel == 'canary'" was false
12:00:00 step 2 gate Waiting for approval: ship it? (waiting for approval: kubectl sched workflow approve rel gate (or deny))
12:00:00 workflow rel Suspended: no new step starts until it is resumed (kubectl sched workflow resume rel)
12:00:00 step 2 gate Succeeded in 2s: approved by alice
12:00:00 step 2 gate output approvedBy=alice
12:00:00 workflow rel resumed
12:00:00 finally 0 notify Running
12:00:00 finally 0 notify Succeeded in 1s
12:00:00 finally 0 notify output sent=Succeeded
12:00:00 workflow rel Succeeded 2/3 steps
Workflow rel Succeeded in 5s (2/3 steps, 1 skipped; finally 1/1)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("appended lines (-want +got):\n%s", diff)
	}

	out.Reset()
	v = New(&out, true, 0, c.Now)
	v.Update(ss[1])
	got := plain(out.String())
	for _, w := range []string{
		"Workflow rel  Running  0s  1/3 steps  Suspended (kubectl sched workflow resume rel)\n",
		"  1  canary  Skipped                         when \"params.channel == 'canary'\" was false\n",
		"  2  gate    Waiting for approval  0s        ship it? (waiting for approval: kubectl sched workflow approve rel gate (or deny))\n",
		"Finally\n  #  STEP    PHASE    DURATION  DETAILS\n  0  notify  Waiting\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("terminal view lacks %q:\n%s", w, got)
		}
	}
	if !strings.Contains(out.String(), "\x1b[33mWaiting for approval") {
		t.Errorf("waiting for approval is not painted as waiting: %q", out.String())
	}
}

func TestStateOfFinallyAndSuspend(t *testing.T) {
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "rel"},
		Spec: schedv1.WorkflowSpec{Suspend: true,
			Steps:   []schedv1.WorkflowStep{{Name: "gate", Approval: &schedv1.StepApproval{Message: "ok?"}}},
			Finally: []schedv1.WorkflowStep{{Name: "notify", Task: schedv1.AgentTaskSpec{Image: "x"}}, {Name: "page", Task: schedv1.AgentTaskSpec{Image: "x"}}}},
		Status: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning,
			Steps:   []schedv1.StepStatus{{Name: "gate", Phase: schedv1.StepWaitingForApproval, Message: "ok?"}},
			Finally: []schedv1.StepStatus{{Name: "page", Phase: schedv1.StepSkipped, Message: `skipped: when "workflow.phase == 'Failed'" was false`}}},
	}
	s := StateOf(wf)
	want := []Step{{Name: "notify", Phase: schedv1.StepWaiting}, {Name: "page", Phase: schedv1.StepSkipped, Message: `when "workflow.phase == 'Failed'" was false`}}
	if diff := cmp.Diff(want, s.Finally); diff != "" || !s.Suspended || s.Steps[0].Phase != schedv1.StepWaitingForApproval {
		t.Errorf("finally (-want +got):\n%s\nsuspended %v, steps %+v", diff, s.Suspended, s.Steps)
	}
	wf.Status.Phase = schedv1.WorkflowSucceeded
	if StateOf(wf).Suspended {
		t.Error("a finished workflow shows as suspended")
	}
}

// loopWorkflow is a workflow whose step deploy loops over 4 regions, at
// the given progress.
func loopWorkflow(phase schedv1.StepPhase, fe schedv1.ForEachStatus, outputs map[string]string, msg string) *schedv1.Workflow {
	start := metav1.NewTime(t0)
	return &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "rel", CreationTimestamp: start},
		Spec: schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{
			{Name: "deploy", ForEach: &schedv1.ForEach{Items: []string{"eu", "us", "ap", "sa"}, MaxParallel: 2}, Task: schedv1.AgentTaskSpec{Image: "x"}},
		}},
		Status: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, StartTime: &start, Steps: []schedv1.StepStatus{
			{Name: "deploy", Phase: phase, StartTime: &start, Message: msg, Outputs: outputs, ForEach: &fe},
		}},
	}
}

// TestViewShowsLoopProgress: a forEach step's progress in its row, each
// item that did not succeed with why (under the step on a terminal, a
// line of its own elsewhere), and its gathered outputs once it ends.
func TestViewShowsLoopProgress(t *testing.T) {
	failed := schedv1.ItemStatus{Index: 2, Phase: schedv1.StepFailed, Message: "exited with code 3:\nno quota in ap"}
	ok := func(k int32) schedv1.ItemStatus { return schedv1.ItemStatus{Index: k, Phase: schedv1.StepSucceeded} }
	running := func(k int32) schedv1.ItemStatus { return schedv1.ItemStatus{Index: k, Phase: schedv1.StepRunning} }
	wfs := []*schedv1.Workflow{
		loopWorkflow(schedv1.StepRunning, schedv1.ForEachStatus{Total: 4, Running: 2, Items: []schedv1.ItemStatus{running(0), running(1)}}, nil, "0/4 items succeeded, 2 running"),
		loopWorkflow(schedv1.StepRunning, schedv1.ForEachStatus{Total: 4, Succeeded: 1, Running: 2, Items: []schedv1.ItemStatus{ok(0), running(1), running(2)}},
			map[string]string{"url": `["https://eu",null,null,null]`}, "1/4 items succeeded, 2 running"),
		// An item started: no new line.
		loopWorkflow(schedv1.StepRunning, schedv1.ForEachStatus{Total: 4, Succeeded: 1, Running: 2, Items: []schedv1.ItemStatus{ok(0), running(1), running(2)}},
			map[string]string{"url": `["https://eu",null,null,null]`}, "1/4 items succeeded, 2 running (again)"),
		loopWorkflow(schedv1.StepRunning, schedv1.ForEachStatus{Total: 4, Succeeded: 1, Running: 1, Failed: 1, Items: []schedv1.ItemStatus{ok(0), running(1), failed}},
			map[string]string{"url": `["https://eu",null,null,null]`}, "1/4 items succeeded, 1 running, 1 failed; no more items start, as one did not succeed"),
		loopWorkflow(schedv1.StepFailed, schedv1.ForEachStatus{Total: 4, Succeeded: 2, Failed: 1, Items: []schedv1.ItemStatus{ok(0), ok(1), failed}},
			map[string]string{"url": `["https://eu","https://us",null,null]`}, `item 2 ("ap") failed: exited with code 3: no quota in ap`),
	}
	// The running items, with their tasks (workflow watch --logs follows them).
	wantActive := []Item{{Index: 0, Phase: schedv1.StepRunning, TaskName: "rel-0-deploy-0"}, {Index: 1, Phase: schedv1.StepRunning, TaskName: "rel-0-deploy-1"}}
	if diff := cmp.Diff(wantActive, StateOf(wfs[0]).Steps[0].Loop.Active); diff != "" {
		t.Errorf("active items (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	c := &clock{now: t0}
	v := New(&out, false, 0, c.Now)
	for _, wf := range wfs {
		v.Update(StateOf(wf))
	}
	want := `12:00:00 workflow rel Running 0/1 steps
12:00:00 step 0 deploy Running: 0/4 items succeeded, 2 running
12:00:00 step 0 deploy Running: 1/4 items succeeded, 2 running
12:00:00 step 0 deploy Running: 1/4 items succeeded, 1 running, 1 failed; no more items start, as one did not succeed
12:00:00 step 0 deploy item 2 Failed: exited with code 3: no quota in ap
12:00:00 step 0 deploy Failed: item 2 ("ap") failed: exited with code 3: no quota in ap
12:00:00 step 0 deploy output url=["https://eu","https://us",null,null]
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("appended lines (-want +got):\n%s", diff)
	}

	out.Reset()
	v = New(&out, true, 0, c.Now)
	v.Update(StateOf(wfs[3]))
	got := plain(out.String())
	for _, w := range []string{
		"  0  deploy    Running  0s        1/4 items (1 running, 1 failed)\n",
		"\n       item 2  Failed             exited with code 3: no quota in ap\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("terminal view lacks %q:\n%s", w, got)
		}
	}
}

// TestViewShowsABackingOffStep: a step whose task waits to retry a failed
// attempt reads "Backing off", with when the next attempt starts, on a
// terminal and in appended lines; its next attempt reads Running again.
func TestViewShowsABackingOffStep(t *testing.T) {
	wait := "attempt 1 of 3 failed (exit code 2); the next starts at 12:00:40 UTC (backoff 30s)"
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "ci", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{{Name: "flaky", Task: schedv1.AgentTaskSpec{Image: "x"}}}},
		Status: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: []schedv1.StepStatus{
			{Name: "flaky", TaskName: "ci-0-flaky", Phase: schedv1.StepRunning, Reason: schedv1.ReasonBackingOff, Message: wait},
		}},
	}
	backingOff := StateOf(wf)
	if got := backingOff.Steps[0].Reason; got != schedv1.ReasonBackingOff {
		t.Fatalf("StateOf: reason %q, want BackingOff", got)
	}
	retrying := backingOff
	retrying.Steps = []Step{{Name: "flaky", TaskName: "ci-0-flaky", Phase: schedv1.StepRunning, Message: "pod ci-0-flaky-x is running (attempt 2)"}}

	var out bytes.Buffer
	c := &clock{now: t0.Add(10 * time.Second)}
	v := New(&out, false, 0, c.Now)
	v.Update(backingOff)
	v.Update(retrying)
	want := `12:00:10 workflow ci Running 0/1 steps
12:00:10 step 0 flaky Backing off: ` + wait + `
12:00:10 step 0 flaky Running: pod ci-0-flaky-x is running (attempt 2)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("appended lines (-want +got):\n%s", diff)
	}

	out.Reset()
	v = New(&out, true, 0, c.Now)
	v.Update(backingOff)
	if got := plain(out.String()); !strings.Contains(got, "  0  flaky  Backing off  ") || !strings.Contains(got, wait) {
		t.Errorf("terminal view lacks the step backing off with its wait:\n%s", got)
	}
	if !strings.Contains(out.String(), "\x1b[33mBacking off") {
		t.Errorf("backing off is not painted as waiting: %q", out.String())
	}
}

// TestViewShowsWorkspaces: the run's workspaces as their claims are made
// and a ReadWriteOnce one's node is known, a line each when not on a
// terminal, and a line under the header on one.
func TestViewShowsWorkspaces(t *testing.T) {
	wf := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "ci", CreationTimestamp: metav1.NewTime(t0)},
		Spec: schedv1.WorkflowSpec{
			Workspaces: []schedv1.Workspace{{Name: "src"}, {Name: "cache"}},
			Steps:      []schedv1.WorkflowStep{{Name: "checkout"}},
		}}
	s0 := StateOf(wf)
	wf.Status.Workspaces = []schedv1.WorkspaceStatus{{Name: "src", ClaimName: "ci-ws-src"}}
	s1 := StateOf(wf)
	wf.Status.Workspaces[0].Node = "node-a"
	s2 := StateOf(wf)
	if diff := cmp.Diff([]Workspace{{Name: "src", Claim: "ci-ws-src", Node: "node-a"}, {Name: "cache"}}, s2.Workspaces); diff != "" {
		t.Errorf("workspaces (-want +got):\n%s", diff)
	}

	var out bytes.Buffer
	v := New(&out, false, 0, func() time.Time { return t0 })
	for _, s := range []State{s0, s1, s2, s2} {
		v.Update(s)
	}
	want := "12:00:00 workflow ci Pending 0/1 steps\n" +
		"12:00:00 workspace src (claim ci-ws-src)\n" +
		"12:00:00 workspace src (claim ci-ws-src on node-a)\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("appended lines (-want +got):\n%s", diff)
	}

	out.Reset()
	v = New(&out, true, 80, func() time.Time { return t0 })
	v.Update(s2)
	if !strings.Contains(out.String(), "Workspaces: src (claim ci-ws-src on node-a), cache (no claim yet)\n") {
		t.Errorf("terminal view has no workspaces line:\n%q", out.String())
	}
}

func TestViewShowsACacheHit(t *testing.T) {
	msg := "cache hit: took the outputs of AgentTask rel-0-build of workflow rel, which succeeded 5m0s ago with the same cache key; ran nothing ('workflow run --no-cache' runs every step)"
	done := metav1.NewTime(t0)
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "rel-2", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{{Name: "build", Task: schedv1.AgentTaskSpec{Image: "x"}}}},
		Status: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: []schedv1.StepStatus{{
			Name: "build", Phase: schedv1.StepSucceeded, Reason: schedv1.ReasonCacheHit, Message: msg,
			StartTime: &done, CompletionTime: &done, Outputs: map[string]string{"image": "reg/app:1"},
			CachedFrom: &schedv1.CachedFrom{Task: "rel-0-build", Workflow: "rel"},
		}}},
	}
	s := StateOf(wf)
	if got := s.Steps[0].CachedFrom; got != "rel-0-build" {
		t.Fatalf("StateOf: cachedFrom %q", got)
	}
	var out bytes.Buffer
	c := &clock{now: t0}
	v := New(&out, false, 0, c.Now)
	v.Update(s)
	want := `12:00:00 workflow rel-2 Running 1/1 steps
12:00:00 step 0 build Succeeded (cached): ` + msg + `
12:00:00 step 0 build output image=reg/app:1
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("appended lines (-want +got):\n%s", diff)
	}

	out.Reset()
	v = New(&out, true, 0, c.Now)
	v.Update(s)
	if got := plain(out.String()); !strings.Contains(got, "  0  build  Succeeded (cached)  ") || !strings.Contains(got, "from rel-0-build: image=reg/app:1") {
		t.Errorf("terminal view lacks the cache hit and where it came from:\n%s", got)
	}
	if !strings.Contains(out.String(), "\x1b[32mSucceeded (cached)") {
		t.Errorf("a cache hit is not painted as succeeded: %q", out.String())
	}
}
