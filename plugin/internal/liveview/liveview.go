// Package liveview is the live view of a workflow: redrawn in place on a
// terminal, and only when something in it changed; one appended line per
// change anywhere else.
package liveview

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// ValueWidth is the longest output value the view shows; longer ones are
// cut, since 'kubectl get -o jsonpath' gives them whole.
const ValueWidth = 40

// State is what the view shows of a workflow.
type State struct {
	Name  string
	Phase schedv1.WorkflowPhase
	// Created, Start and End bound the elapsed time; Start and End are zero
	// until the operator sets them.
	Created, Start, End time.Time
	Message             string
	Steps               []Step
	// Finally are the finally steps, shown in a section of their own.
	Finally []Step
	// Suspended: spec.suspend holds the start of new steps.
	Suspended bool
	// Workspaces are the workflow's, in spec order.
	Workspaces []Workspace
}

// Workspace is one workspace of the run: its claim once made, and the
// node a ReadWriteOnce one keeps the run's pods on once known.
type Workspace struct {
	Name, Claim, Node string
}

// String reads "src (claim ci-ws-src on node-a)".
func (w Workspace) String() string {
	switch {
	case w.Claim == "":
		return w.Name + " (no claim yet)"
	case w.Node == "":
		return w.Name + " (claim " + w.Claim + ")"
	}
	return w.Name + " (claim " + w.Claim + " on " + w.Node + ")"
}

// Step is one row of the view.
type Step struct {
	Name     string
	TaskName string
	Phase    schedv1.StepPhase
	// Start and End are zero until known.
	Start, End time.Time
	Outputs    map[string]string
	Message    string
	// Reason is the step's, when the phase alone does not say
	// (WaitingForApproval, BackingOff, ...).
	Reason string
	// After are the steps it waits for, when the workflow declares
	// dependsOn (a DAG); empty for a plain sequence.
	After []string
	// Loop is the progress of a forEach step, nil for any other.
	Loop *Loop
	// CachedFrom is the task whose outputs a cache hit took (reason
	// CacheHit), "" for any other step.
	CachedFrom string
}

// Loop is what the view shows of a forEach step: its counts, and the
// items that did not succeed, each with why.
type Loop struct {
	Total, Succeeded, Running, Failed int
	// Unsuccessful are the items that failed, timed out or were
	// cancelled, in item order.
	Unsuccessful []Item
	// Active are the items started and not ended, with their tasks.
	Active []Item
}

// Item is an item of a loop.
type Item struct {
	Index    int
	Phase    schedv1.StepPhase
	Message  string
	TaskName string
}

// Progress reads "3/10 items (2 running, 1 failed)".
func (l *Loop) Progress() string {
	msg := fmt.Sprintf("%d/%d items", l.Succeeded, l.Total)
	var more []string
	if l.Running > 0 {
		more = append(more, fmt.Sprintf("%d running", l.Running))
	}
	if l.Failed > 0 {
		more = append(more, fmt.Sprintf("%d failed", l.Failed))
	}
	if len(more) > 0 {
		msg += " (" + strings.Join(more, ", ") + ")"
	}
	return msg
}

// PhaseText is how a step's phase reads, with its reason:
// WaitingForApproval as "Waiting for approval", Running with reason
// BackingOff (its task waits to retry a failed attempt) as "Backing off",
// Succeeded with reason CacheHit (it took a cached result) as "Succeeded
// (cached)", the others as they are.
func PhaseText(p schedv1.StepPhase, reason string) string {
	switch {
	case p == schedv1.StepWaitingForApproval:
		return "Waiting for approval"
	case p == schedv1.StepRunning && reason == schedv1.ReasonBackingOff:
		return "Backing off"
	case p == schedv1.StepSucceeded && reason == schedv1.ReasonCacheHit:
		return "Succeeded (cached)"
	}
	return string(p)
}

// StateOf reads a workflow. Rows come from the spec, so steps the operator
// has not reported yet show as Waiting. Every text is made safe for the
// terminal here (printing.Line), as the steps' containers wrote much of it:
// what the view prints of a State needs no more care.
func StateOf(wf *schedv1.Workflow) State {
	st := wf.Status
	s := State{Name: printing.Line(wf.Name), Phase: schedv1.WorkflowPhase(printing.Line(string(st.Phase))), Created: wf.CreationTimestamp.Time, Message: oneLine(st.Message)}
	if s.Phase == "" {
		s.Phase = schedv1.WorkflowPending
	}
	if st.StartTime != nil {
		s.Start = st.StartTime.Time
	}
	if st.CompletionTime != nil {
		s.End = st.CompletionTime.Time
	}
	s.Steps = steps(wf.Spec.Steps, st.Steps, func(i, k int) string { return names.ItemTask(wf.Name, i, wf.Spec.Steps[i].Name, k) })
	s.Finally = steps(wf.Spec.Finally, st.Finally, func(j, k int) string { return names.FinallyItemTask(wf.Name, j, wf.Spec.Finally[j].Name, k) })
	s.Suspended = wf.Spec.Suspend && !st.Phase.Finished()
	for _, ws := range wf.Spec.Workspaces {
		w := Workspace{Name: printing.Line(ws.Name)}
		for _, got := range st.Workspaces {
			if got.Name == ws.Name {
				w.Claim, w.Node = printing.Line(got.ClaimName), printing.Line(got.Node)
			}
		}
		s.Workspaces = append(s.Workspaces, w)
	}
	return s
}

// steps reads the rows of one list: spec's steps with their status;
// itemTask names the task of item k of step i.
func steps(spec []schedv1.WorkflowStep, status []schedv1.StepStatus, itemTask func(i, k int) string) []Step {
	byName := map[string]schedv1.StepStatus{}
	for _, ss := range status {
		byName[ss.Name] = ss
	}
	dag := slices.ContainsFunc(spec, func(st schedv1.WorkflowStep) bool { return len(st.DependsOn) > 0 })
	var out []Step
	for i, spec := range spec {
		ss, ok := byName[spec.Name]
		step := Step{Name: printing.Line(spec.Name), Phase: schedv1.StepWaiting}
		if dag {
			for _, d := range spec.DependsOn {
				step.After = append(step.After, printing.Line(d))
			}
		}
		if ok {
			step.TaskName, step.Phase, step.Message = printing.Line(ss.TaskName), schedv1.StepPhase(printing.Line(string(ss.Phase))), oneLine(ss.Message)
			step.Reason = printing.Line(ss.Reason)
			if ss.CachedFrom != nil {
				step.CachedFrom = printing.Line(ss.CachedFrom.Task)
			}
			if len(ss.Outputs) > 0 {
				step.Outputs = make(map[string]string, len(ss.Outputs))
				for k, v := range ss.Outputs {
					step.Outputs[printing.Line(k)] = printing.Line(v)
				}
			}
			if ss.Phase == schedv1.StepSkipped {
				// The phase already says it.
				step.Message = strings.TrimPrefix(step.Message, "skipped: ")
			}
			if ss.StartTime != nil {
				step.Start = ss.StartTime.Time
			}
			if ss.CompletionTime != nil {
				step.End = ss.CompletionTime.Time
			}
			step.Loop = LoopOf(ss.ForEach)
			if step.Loop != nil {
				for _, it := range ss.ForEach.Items {
					if !it.Phase.Finished() {
						step.Loop.Active = append(step.Loop.Active, Item{Index: int(it.Index), Phase: it.Phase, TaskName: itemTask(i, int(it.Index))})
					}
				}
			}
		}
		out = append(out, step)
	}
	return out
}

// LoopOf reads a forEach step's status; nil when it has none.
func LoopOf(fe *schedv1.ForEachStatus) *Loop {
	if fe == nil {
		return nil
	}
	l := &Loop{Total: int(fe.Total), Succeeded: int(fe.Succeeded), Running: int(fe.Running), Failed: int(fe.Failed)}
	for _, it := range fe.Items {
		if it.Phase.Finished() && it.Phase != schedv1.StepSucceeded {
			l.Unsuccessful = append(l.Unsuccessful, Item{Index: int(it.Index), Phase: schedv1.StepPhase(printing.Line(string(it.Phase))), Message: oneLine(it.Message)})
		}
	}
	return l
}

// Done counts the steps that succeeded.
func (s State) Done() int { return count(s.Steps, schedv1.StepSucceeded) }

func count(steps []Step, phase schedv1.StepPhase) int {
	n := 0
	for _, st := range steps {
		if st.Phase == phase {
			n++
		}
	}
	return n
}

// Elapsed is how long the workflow has run (until now, or until it ended).
func (s State) Elapsed(now time.Time) time.Duration {
	start := s.Start
	if start.IsZero() {
		start = s.Created
	}
	return span(start, s.End, now)
}

// Summary is the line printed when the workflow ends: the outcome and, on
// failure, the failing step's message.
func Summary(s State) string {
	took := printing.FormatDuration(s.Elapsed(s.End))
	progress := fmt.Sprintf("%d/%d steps", s.Done(), len(s.Steps))
	if n := count(s.Steps, schedv1.StepSkipped); n > 0 && s.Phase == schedv1.WorkflowSucceeded {
		progress += fmt.Sprintf(", %d skipped", n)
	}
	if len(s.Finally) > 0 {
		progress += fmt.Sprintf("; finally %d/%d", count(s.Finally, schedv1.StepSucceeded), len(s.Finally))
	}
	switch s.Phase {
	case schedv1.WorkflowSucceeded:
		return fmt.Sprintf("Workflow %s Succeeded in %s (%s)", s.Name, took, progress)
	case schedv1.WorkflowTimeout:
		return fmt.Sprintf("Workflow %s timed out after %s (%s): %s", s.Name, took, progress, s.Message)
	}
	return fmt.Sprintf("Workflow %s %s after %s (%s): %s", s.Name, s.Phase, took, progress, s.Failure())
}

// Failure explains a failed workflow: the operator's message, which names
// the failing step, or else the first failed step's own message.
func (s State) Failure() string {
	if s.Message != "" {
		return s.Message
	}
	for i, st := range s.Steps {
		if st.Phase == schedv1.StepFailed || st.Phase == schedv1.StepTimeout || st.Phase == schedv1.StepCancelled {
			return fmt.Sprintf("step %d (%s) %s: %s", i, st.Name, st.Phase, st.Message)
		}
	}
	return "no step reports why"
}

// FailedStep is the first step that failed, timed out or was cancelled,
// else the first such finally step, or nil.
func (s State) FailedStep() *Step {
	for _, list := range [][]Step{s.Steps, s.Finally} {
		for i := range list {
			if p := list[i].Phase; p == schedv1.StepFailed || p == schedv1.StepTimeout || p == schedv1.StepCancelled {
				return &list[i]
			}
		}
	}
	return nil
}

// View shows a workflow as it changes. On a terminal (tty) it redraws a
// header and a row per step in place, and only when the drawing changed; a
// log line scrolls above it. Anywhere else it writes no escape codes at all
// and appends one line per change, so the scrollback is a record. It is
// safe for concurrent use (logs arrive from other goroutines).
type View struct {
	mu    sync.Mutex
	out   io.Writer
	tty   bool
	width int
	now   func() time.Time

	last   *State
	frame  string // what is on the screen (tty)
	height int    // its lines
}

// New returns a view writing to out. tty picks the in-place drawing;
// width (0: unlimited) cuts lines so they do not wrap, which would break
// the redraw; now is the clock.
func New(out io.Writer, tty bool, width int, now func() time.Time) *View {
	if now == nil {
		now = time.Now
	}
	return &View{out: out, tty: tty, width: width, now: now}
}

// Update shows s.
func (v *View) Update(s State) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.show(s)
}

// show redraws the view on a terminal, or prints what changed elsewhere.
// The caller holds v.mu.
func (v *View) show(s State) {
	if v.tty {
		v.draw(v.render(s))
	} else {
		v.appendChanges(s)
	}
	v.last = &s
}

// Tick redraws the elapsed times on a terminal; it does nothing elsewhere.
func (v *View) Tick() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tty && v.last != nil && v.height > 0 {
		v.draw(v.render(*v.last))
	}
}

// Log writes a line of logs (or a note) without breaking the view: a
// newline, a carriage return or an escape in it would.
func (v *View) Log(line string) {
	line = printing.Line(line)
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.tty || v.height == 0 {
		fmt.Fprintln(v.out, line)
		return
	}
	// Clear the view, print the line where it was, draw the view below it.
	fmt.Fprint(v.out, v.clear()+line+"\n"+v.frame)
}

// Finish shows the final state and the summary line; the view is not
// redrawn after it.
func (v *View) Finish(s State) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.show(s)
	v.frame, v.height = "", 0
	fmt.Fprintln(v.out, Summary(s))
}

// Stop leaves the view as it is; later lines go below it.
func (v *View) Stop() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.frame, v.height = "", 0
}

// draw replaces the view on the screen with frame, unless it is the same:
// this guard is what keeps the screen from flickering on events and ticks
// that change nothing visible. The whole frame goes out in one write.
func (v *View) draw(frame string) {
	if frame == v.frame {
		return
	}
	fmt.Fprint(v.out, v.clear()+frame)
	v.frame, v.height = frame, strings.Count(frame, "\n")
}

// clear moves the cursor up over the view and clears to the end of the screen.
func (v *View) clear() string {
	if v.height == 0 {
		return ""
	}
	return fmt.Sprintf("\x1b[%dA\r\x1b[J", v.height)
}

// appendChanges writes a line for each change since the last state: the
// workflow's phase, its suspension, each step's and finally step's phase
// or message, each new output.
func (v *View) appendChanges(s State) {
	stamp := v.now().Format("15:04:05")
	var prev State
	if v.last != nil {
		prev = *v.last
	}
	phaseLine := ""
	if v.last == nil || prev.Phase != s.Phase {
		phaseLine = fmt.Sprintf("%s workflow %s %s %d/%d steps\n", stamp, s.Name, s.Phase, s.Done(), len(s.Steps))
	}
	// A workflow starts before its steps and ends after them: its final
	// line comes after the last step's, which the same update reports.
	if !s.Phase.Finished() {
		fmt.Fprint(v.out, phaseLine)
		phaseLine = ""
	}
	defer fmt.Fprint(v.out, phaseLine)
	if s.Suspended != prev.Suspended && (s.Suspended || v.last != nil) {
		if s.Suspended {
			fmt.Fprintf(v.out, "%s workflow %s Suspended: no new step starts until it is resumed (kubectl sched workflow resume %s)\n", stamp, s.Name, s.Name)
		} else {
			fmt.Fprintf(v.out, "%s workflow %s resumed\n", stamp, s.Name)
		}
	}
	v.appendWorkspaces(stamp, prev.Workspaces, s.Workspaces)
	v.appendSteps(stamp, "step", prev.Steps, s.Steps)
	v.appendSteps(stamp, "finally", prev.Finally, s.Finally)
}

// appendWorkspaces writes a line for each workspace whose claim was made,
// or whose node became known, since prev.
func (v *View) appendWorkspaces(stamp string, prev, now []Workspace) {
	for i, w := range now {
		var old Workspace
		if i < len(prev) && prev[i].Name == w.Name {
			old = prev[i]
		}
		if w.Claim != old.Claim || w.Node != old.Node {
			if w.Claim != "" {
				fmt.Fprintf(v.out, "%s workspace %s\n", stamp, w)
			}
		}
	}
}

// appendSteps writes the changes of one list of steps; what names it.
func (v *View) appendSteps(stamp, what string, prev, steps []Step) {
	for i, st := range steps {
		old := Step{Phase: schedv1.StepWaiting}
		if i < len(prev) && prev[i].Name == st.Name {
			old = prev[i]
		}
		if st.Phase != old.Phase || st.Reason != old.Reason || st.Message != old.Message && !sameLoopEnds(st.Loop, old.Loop) {
			name := st.Name
			if old.Phase == schedv1.StepWaiting && len(st.After) > 0 {
				// Where a branch starts, once.
				name += " (after " + strings.Join(st.After, ", ") + ")"
			}
			line := fmt.Sprintf("%s %s %d %s %s", stamp, what, i, name, PhaseText(st.Phase, st.Reason))
			if st.Phase.Finished() && st.Phase != schedv1.StepSkipped && st.CachedFrom == "" && !st.Start.IsZero() && !st.End.IsZero() {
				line += " in " + printing.FormatDuration(st.End.Sub(st.Start))
			}
			if st.Message != "" {
				line += ": " + st.Message
			}
			fmt.Fprintln(v.out, line)
		}
		if st.Loop != nil {
			v.appendItems(stamp, what, i, st, old)
			if !st.Phase.Finished() {
				// Its outputs fill in as items succeed: shown once it ends.
				continue
			}
		}
		for _, k := range slices.Sorted(maps.Keys(st.Outputs)) {
			if val, had := old.Outputs[k]; !had || val != st.Outputs[k] {
				fmt.Fprintf(v.out, "%s %s %d %s output %s=%s\n", stamp, what, i, st.Name, k, cut(st.Outputs[k], ValueWidth))
			}
		}
	}
}

// sameLoopEnds reports two states of a loop with as many items ended:
// a line per item started would drown the others.
func sameLoopEnds(a, b *Loop) bool {
	return a != nil && b != nil && a.Succeeded == b.Succeeded && a.Failed == b.Failed
}

// appendItems writes a line for each item of loop st (step i) that did
// not succeed since old.
func (v *View) appendItems(stamp, what string, i int, st, old Step) {
	seen := map[int]bool{}
	if old.Loop != nil {
		for _, it := range old.Loop.Unsuccessful {
			seen[it.Index] = true
		}
	}
	for _, it := range st.Loop.Unsuccessful {
		if seen[it.Index] {
			continue
		}
		line := fmt.Sprintf("%s %s %d %s item %d %s", stamp, what, i, st.Name, it.Index, PhaseText(it.Phase, ""))
		if it.Message != "" {
			line += ": " + it.Message
		}
		fmt.Fprintln(v.out, line)
	}
}

// render draws the terminal view: a header, then a row per step, then
// the finally steps under a header of their own.
func (v *View) render(s State) string {
	now := v.now()
	var b strings.Builder
	header := fmt.Sprintf("Workflow %s  %s  %s  %d/%d steps", s.Name, s.Phase, printing.FormatDuration(s.Elapsed(now)), s.Done(), len(s.Steps))
	if s.Suspended {
		header += "  Suspended (kubectl sched workflow resume " + s.Name + ")"
	}
	if v.width > 0 && printing.Width(header) >= v.width {
		b.WriteString(cut(header, v.width-1) + "\n")
	} else {
		b.WriteString(strings.Replace(header, "  "+string(s.Phase)+"  ", "  "+paint(string(s.Phase), string(s.Phase))+"  ", 1) + "\n")
	}
	if len(s.Workspaces) > 0 {
		parts := make([]string, len(s.Workspaces))
		for i, w := range s.Workspaces {
			parts[i] = w.String()
		}
		line := "Workspaces: " + strings.Join(parts, ", ")
		if v.width > 0 && printing.Width(line) >= v.width {
			line = cut(line, v.width-1)
		}
		b.WriteString(line + "\n")
	}
	v.table(&b, s.Steps, now)
	if len(s.Finally) > 0 {
		b.WriteString("Finally\n")
		v.table(&b, s.Finally, now)
	}
	return b.String()
}

// table draws the rows of one list of steps.
func (v *View) table(b *strings.Builder, steps []Step, now time.Time) {
	// A DAG gets an AFTER column; a plain sequence reads top to bottom.
	dag := slices.ContainsFunc(steps, func(st Step) bool { return len(st.After) > 0 })
	columns := []string{"#", "STEP", "PHASE", "DURATION", "DETAILS"}
	if dag {
		columns = []string{"#", "STEP", "AFTER", "PHASE", "DURATION", "DETAILS"}
	}
	phaseCol := len(columns) - 3
	style := printing.TableStyle{Gap: 2, Indent: 2, Paint: func(col int, cell string) string {
		if col == phaseCol {
			return paint(cell, cell)
		}
		return cell
	}}
	if v.width > 0 {
		// A line that wraps breaks the redraw.
		style.MaxWidth = v.width - 1
	}
	t := printing.NewTableWriter(b, style)
	t.Header(columns...)
	for i, st := range steps {
		d := ""
		if !st.Start.IsZero() && st.Phase != schedv1.StepSkipped {
			d = printing.FormatDuration(span(st.Start, st.End, now))
		}
		row := []string{strconv.Itoa(i), st.Name}
		if dag {
			row = append(row, strings.Join(st.After, ","))
		}
		t.Row(append(row, PhaseText(st.Phase, st.Reason), d, detail(st))...)
		if st.Loop == nil {
			continue
		}
		// The items that did not succeed, under their step.
		for _, it := range st.Loop.Unsuccessful {
			row := []string{"", fmt.Sprintf("  item %d", it.Index)}
			if dag {
				row = append(row, "")
			}
			t.Row(append(row, PhaseText(it.Phase, ""), "", it.Message)...)
		}
	}
	_ = t.Render() // a strings.Builder does not fail
}

// detail is a row's last column: why a step failed, waits, backs off or
// was skipped, else its outputs.
func detail(st Step) string {
	if st.Reason == schedv1.ReasonBackingOff {
		return st.Message
	}
	if st.Loop != nil && st.Phase != schedv1.StepSucceeded {
		// How far it is; its outputs fill in as items succeed.
		if st.Phase.Finished() {
			return st.Message
		}
		return st.Loop.Progress()
	}
	switch st.Phase {
	case schedv1.StepFailed, schedv1.StepTimeout, schedv1.StepSkipped, schedv1.StepPending, schedv1.StepCancelled, schedv1.StepWaitingForApproval:
		return st.Message
	}
	if len(st.Outputs) == 0 {
		return st.Message
	}
	var parts []string
	if st.CachedFrom != "" {
		parts = append(parts, "from "+st.CachedFrom+":")
	}
	for _, k := range slices.Sorted(maps.Keys(st.Outputs)) {
		parts = append(parts, k+"="+cut(st.Outputs[k], ValueWidth))
	}
	return strings.Join(parts, " ")
}

// paint colours text by phase (the view only paints on a terminal).
func paint(phase, text string) string {
	code := ""
	switch phase {
	case string(schedv1.StepSucceeded), PhaseText(schedv1.StepSucceeded, schedv1.ReasonCacheHit):
		code = "32"
	case string(schedv1.StepFailed), string(schedv1.StepTimeout):
		code = "31"
	case string(schedv1.StepRunning):
		code = "36"
	case string(schedv1.StepPending), PhaseText(schedv1.StepWaitingForApproval, ""), PhaseText(schedv1.StepRunning, schedv1.ReasonBackingOff):
		code = "33"
	case string(schedv1.StepWaiting), string(schedv1.StepSkipped), string(schedv1.StepCancelled):
		code = "2"
	default:
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// span is end-start, or now-start while end is unknown, never negative
// (the client's clock may be behind the server's).
func span(start, end, now time.Time) time.Duration {
	if end.IsZero() {
		end = now
	}
	if start.IsZero() || end.Before(start) {
		return 0
	}
	return end.Sub(start)
}

// cut shortens s to one line of at most n columns, marking a cut with "…".
func cut(s string, n int) string {
	return printing.Truncate(oneLine(s), n)
}

// oneLine keeps a message on its line, safe: a view row or an appended
// line must not be broken by a newline or an escape from a container's
// termination message.
func oneLine(s string) string { return printing.OneLine(s) }
