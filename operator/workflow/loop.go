package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// A forEach step (a loop) runs its task once per item, each as an
// AgentTask of its own (names.ItemTask), at most forEach.maxParallel at a
// time, in item order. Its status records each item started
// (status.forEach.items), which never starts again, and gathers each
// item's outputs into JSON arrays as the item succeeds (gather), so that
// a restart loses none. The list is read again from the spec, or from the
// recorded output or param forEach.from names, whenever items start:
// item values are never stored.
//
// The step's phase follows its items (settleLoop): Succeeded once every
// item has; Failed once an item failed and none runs any more (at once
// with spec.failFast, its running items cancelled); Running or Pending
// until then. No item starts after one failed, nor while spec.suspend is
// set. A loop that ended for any reason has its running items cancelled
// (sweepLoops): spec.cancel, spec.timeout, failFast, TooLarge.

// itemTasks are the AgentTasks of the loops' items, by step index (counted
// as decide counts: spec.steps, then spec.finally) and item index.
type itemTasks map[int]map[int]*schedv1.AgentTask

// maxItemMessage bounds an item's message, its CRD bound.
const maxItemMessage = 512

// specStep is step i of spec.steps, or of spec.finally from
// len(spec.steps) on.
func specStep(wf *schedv1.Workflow, i int) *schedv1.WorkflowStep {
	if n := len(wf.Spec.Steps); i >= n {
		return &wf.Spec.Finally[i-n]
	}
	return &wf.Spec.Steps[i]
}

// isLoop reports whether step i (counted as decide counts) has forEach.
func isLoop(wf *schedv1.Workflow, i int) bool { return specStep(wf, i).ForEach != nil }

// startedLoop reports whether step i is a loop that started and has not
// ended: its next items may start.
func startedLoop(wf *schedv1.Workflow, s *schedv1.StepStatus, i int) bool {
	return isLoop(wf, i) && s.ForEach != nil && isActive(s.Phase)
}

// loopItems is the list step i runs over: forEach.items, or the value
// forEach.from names, read from the params and the recorded outputs. An
// error fails the step with the reason returned.
func loopItems(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int) ([]string, string, error) {
	fe := specStep(wf, i).ForEach
	if len(fe.Items) > 0 {
		return fe.Items, "", nil
	}
	items, err := substitution.ResolveItems(i, fe.From, stepValues(wf, i, st))
	if err != nil {
		return nil, taskErrorReason(err), err
	}
	return items, "", nil
}

// startLoop starts loop i once its dependencies succeeded and its when
// let it run: it reads the list and starts the first items. An empty list
// makes the step succeed at once, with no items.
func startLoop(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, p *plan, now metav1.Time) (string, error) {
	items, reason, err := loopItems(wf, st, i)
	if err != nil {
		if err = explainHeld(err, p.held); reason == schedv1.ReasonMissingOutput {
			reason = taskErrorReason(err)
		}
		return reason, err
	}
	s := stepStatus(wf, st, i)
	s.StartTime, s.ForEach = &now, &schedv1.ForEachStatus{Total: int32(len(items))}
	if len(items) == 0 {
		s.Phase, s.CompletionTime = schedv1.StepSucceeded, &now
		s.Message = fmt.Sprintf("forEach.from %s is an empty list: no item ran, and each output reads []", specStep(wf, i).ForEach.From)
		return "", nil
	}
	s.Phase = schedv1.StepPending
	return advanceLoop(wf, st, i, p, now)
}

// advanceLoop starts the next items of loop i, in order, as many as
// forEach.maxParallel leaves room for, unless an item failed. An item
// whose task cannot be built fails (no task is created); an error fails
// the whole step.
func advanceLoop(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, p *plan, now metav1.Time) (string, error) {
	s := stepStatus(wf, st, i)
	fe := s.ForEach
	if fe.Failed > 0 {
		return "", nil
	}
	items, reason, err := loopItems(wf, st, i)
	if err != nil {
		return reason, err
	}
	if len(items) != int(fe.Total) {
		// Read from the spec or a recorded output, which do not change.
		return schedv1.ReasonInvalidSpec, fmt.Errorf("its list now has %d items, %d when it started", len(items), fe.Total)
	}
	limit := len(items)
	if mp := specStep(wf, i).ForEach.MaxParallel; mp > 0 {
		limit = int(mp)
	}
	started := map[int32]bool{}
	for _, it := range fe.Items {
		started[it.Index] = true
	}
	built := 0
	for k := 0; k < len(items) && int(fe.Running) < limit && built < maxItemBytesPerPass; k++ {
		if started[int32(k)] {
			continue
		}
		task, err := newItemTask(wf, i, st, k, items[k])
		if err != nil {
			fe.Items = append(fe.Items, schedv1.ItemStatus{Index: int32(k), Phase: schedv1.StepFailed,
				StartTime: &now, CompletionTime: &now, Message: clipTo("cannot start: "+err.Error(), maxItemMessage)})
			if s.Reason == "" {
				// TooLarge or MissingOutput: the workflow's reason if it fails of it.
				s.Reason = taskErrorReason(err)
			}
			break
		}
		p.creates = append(p.creates, stepCreate{step: i, loop: true, item: k, task: task})
		fe.Items = append(fe.Items, schedv1.ItemStatus{Index: int32(k), Phase: schedv1.StepPending, StartTime: &now})
		fe.Running++
		built += renderedSize(&task.Spec)
	}
	sortItems(fe)
	countItems(fe)
	settleLoop(wf, s, i, items, now)
	return "", nil
}

// maxItemBytesPerPass bounds the item tasks one pass builds, by the size
// of their rendered strings: a step may render to 640.5 KiB, and 100 such
// items at once would hold 64 MiB in one reconcile. Past it the other
// items start in the next pass, which the status write brings at once.
const maxItemBytesPerPass = 4 << 20

// renderedSize is what a task's image, command, args and env values hold.
func renderedSize(t *schedv1.AgentTaskSpec) int {
	n := len(t.Image)
	for _, s := range t.Command {
		n += len(s)
	}
	for _, s := range t.Args {
		n += len(s)
	}
	for _, e := range t.Env {
		n += len(e.Value)
	}
	return n
}

// syncLoops copies what the items' tasks report into the status of each
// loop that has not ended, and settles its phase.
func syncLoops(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, items itemTasks, now metav1.Time) {
	for i := range len(wf.Spec.Steps) + len(wf.Spec.Finally) {
		if s := stepStatus(wf, st, i); isLoop(wf, i) && !s.Phase.Finished() {
			syncLoop(wf, st, i, items[i], now)
		}
	}
}

// syncLoop is syncLoops for loop i, whose item tasks are found. A loop
// whose items exist but whose status does not say it started (the
// operator stopped after creating them, before writing it) is taken as
// started: its when was true, and its list reads the same again.
func syncLoop(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, found map[int]*schedv1.AgentTask, now metav1.Time) {
	s := stepStatus(wf, st, i)
	if s.ForEach == nil {
		if len(found) == 0 {
			return
		}
		items, reason, err := loopItems(wf, st, i)
		if err != nil {
			s.Phase, s.Reason, s.Message, s.CompletionTime = schedv1.StepFailed, reason, err.Error(), &now
			return
		}
		s.Phase, s.ForEach = schedv1.StepPending, &schedv1.ForEachStatus{Total: int32(len(items))}
		for _, t := range found {
			if ts := t.CreationTimestamp; s.StartTime == nil || ts.Before(s.StartTime) {
				s.StartTime = &ts
			}
		}
	}
	fe := s.ForEach
	for _, k := range slices.Sorted(maps.Keys(found)) {
		t := found[k]
		if k >= int(fe.Total) {
			continue // not an item of this list: never taken for one
		}
		it := itemStatus(fe, k)
		if it.Phase.Finished() {
			continue
		}
		if it.StartTime == nil {
			ts := t.CreationTimestamp
			it.StartTime = &ts
		}
		it.Phase, it.CompletionTime, it.Message = stepPhase(t), t.Status.CompletionTime, ""
		if it.Phase.Finished() && it.Phase != schedv1.StepSucceeded {
			it.Message = clipTo(t.Status.Message, maxItemMessage)
		}
		if it.Phase == schedv1.StepSucceeded && !s.Phase.Finished() {
			if err := gather(s, int(fe.Total), k, schedv1.StepOutputs(&t.Status)); err != nil {
				s.Phase, s.Reason, s.CompletionTime = schedv1.StepFailed, schedv1.ReasonTooLarge, &now
				s.Message = fmt.Sprintf("step %s: %v", s.Name, err)
			}
		}
	}
	for j := range fe.Items {
		it := &fe.Items[j]
		if !it.Phase.Finished() && found[int(it.Index)] == nil {
			// Started, and its task is gone without finishing: never run
			// it again, since an item must not run twice.
			it.Phase, it.CompletionTime = schedv1.StepFailed, &now
			it.Message = fmt.Sprintf("its AgentTask %s was deleted before it finished", itemTaskName(wf, i, int(it.Index)))
		}
	}
	countItems(fe)
	if s.Phase.Finished() {
		return
	}
	items, _, err := loopItems(wf, st, i)
	if err != nil {
		items = nil // the messages name items by index only
	}
	settleLoop(wf, s, i, items, now)
}

// itemStatus is item k's entry in fe, added (Pending) when missing.
func itemStatus(fe *schedv1.ForEachStatus, k int) *schedv1.ItemStatus {
	for j := range fe.Items {
		if int(fe.Items[j].Index) == k {
			return &fe.Items[j]
		}
	}
	fe.Items = append(fe.Items, schedv1.ItemStatus{Index: int32(k), Phase: schedv1.StepPending})
	sortItems(fe)
	for j := range fe.Items {
		if int(fe.Items[j].Index) == k {
			return &fe.Items[j]
		}
	}
	return nil // not reached
}

// sortItems keeps fe's items in item order: one a full quota held back
// starts after later ones.
func sortItems(fe *schedv1.ForEachStatus) {
	slices.SortFunc(fe.Items, func(a, b schedv1.ItemStatus) int { return int(a.Index - b.Index) })
}

// countItems sets fe's counts from its items.
func countItems(fe *schedv1.ForEachStatus) {
	fe.Succeeded, fe.Failed, fe.Running = 0, 0, 0
	for _, it := range fe.Items {
		switch {
		case it.Phase == schedv1.StepSucceeded:
			fe.Succeeded++
		case it.Phase.Finished():
			fe.Failed++
		default:
			fe.Running++
		}
	}
}

// settleLoop sets the phase and message of loop i, which has not ended,
// from its items: Failed once an item failed and none runs (at once with
// spec.failFast), Succeeded once every item did, else Running (once an
// item ran) or Pending, with its progress as message. items names them
// in messages; nil names them by index only.
func settleLoop(wf *schedv1.Workflow, s *schedv1.StepStatus, i int, items []string, now metav1.Time) {
	fe := s.ForEach
	switch {
	case fe.Failed > 0 && (fe.Running == 0 || wf.Spec.FailFast):
		var first schedv1.ItemStatus
		for _, it := range fe.Items {
			if it.Phase.Finished() && it.Phase != schedv1.StepSucceeded {
				first = it
				break
			}
		}
		s.Phase, s.CompletionTime = schedv1.StepFailed, &now
		s.Message = fmt.Sprintf("%s %s: %s", itemLabel(int(first.Index), items), phaseWord(first.Phase), first.Message)
		if fe.Failed > 1 {
			s.Message += fmt.Sprintf(" (and %d more items did not succeed)", fe.Failed-1)
		}
		if fe.Running > 0 {
			s.Message += fmt.Sprintf("; %d running items stopped (spec.failFast)", fe.Running)
		}
	case fe.Succeeded == fe.Total:
		s.Phase, s.CompletionTime = schedv1.StepSucceeded, &now
		s.Message = fmt.Sprintf("all %d items succeeded", fe.Total)
		if n := len(s.Outputs); n > 0 {
			s.Message += fmt.Sprintf(", %d output(s) gathered", n)
		}
	default:
		if slices.ContainsFunc(fe.Items, func(it schedv1.ItemStatus) bool { return it.Phase == schedv1.StepRunning }) {
			s.Phase = schedv1.StepRunning
		}
		s.Message = loopProgress(fe)
		if fe.Failed > 0 {
			s.Message += "; no more items start, as one did not succeed"
		}
	}
}

// loopProgress says how far a loop is: "3/10 items succeeded, 2 running, 1 failed".
func loopProgress(fe *schedv1.ForEachStatus) string {
	msg := fmt.Sprintf("%d/%d items succeeded", fe.Succeeded, fe.Total)
	if fe.Running > 0 {
		msg += fmt.Sprintf(", %d running", fe.Running)
	}
	if fe.Failed > 0 {
		msg += fmt.Sprintf(", %d failed", fe.Failed)
	}
	return msg
}

// itemLabel names item k, with the start of its value when known.
func itemLabel(k int, items []string) string {
	if k >= len(items) {
		return fmt.Sprintf("item %d", k)
	}
	v := items[k]
	if len(v) > 32 {
		v = clipTo(v, 32)
	}
	return fmt.Sprintf("item %d (%q)", k, v)
}

// gather adds the outputs of item k, which succeeded, to loop s's
// outputs: each key's value is a JSON array of total entries, the value
// of each item that succeeded and wrote the key, null for the others. It
// fails when the outputs would pass MaxLoopOutputBytes or 64 keys.
func gather(s *schedv1.StepStatus, total, k int, outputs map[string]string) error {
	if len(outputs) == 0 {
		return nil
	}
	merged := maps.Clone(s.Outputs)
	if merged == nil {
		merged = map[string]string{}
	}
	for _, key := range slices.Sorted(maps.Keys(outputs)) {
		arr := make([]*string, total)
		if old, ok := merged[key]; ok {
			if err := json.Unmarshal([]byte(old), &arr); err != nil || len(arr) != total {
				return fmt.Errorf("the gathered output %q is not an array of %d items", key, total)
			}
		}
		v := outputs[key]
		arr[k] = &v
		b, err := marshalArray(arr)
		if err != nil {
			return err
		}
		merged[key] = b
	}
	if len(merged) > maxLoopKeys {
		return fmt.Errorf("its items wrote %d different output keys, more than the %d a step may hold; have every item write the same keys", len(merged), maxLoopKeys)
	}
	if n := outputsSize(merged); n > schedv1.MaxLoopOutputBytes {
		return fmt.Errorf("the outputs of its items, gathered into JSON arrays, reach %d bytes with item %d's, more than the %d a forEach step may hold; have the items write fewer or shorter outputs", n, k, schedv1.MaxLoopOutputBytes)
	}
	s.Outputs = merged
	return nil
}

// maxLoopKeys is the CRD's bound on a step's outputs.
const maxLoopKeys = 64

func outputsSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// marshalArray writes arr as compact JSON, "<" and "&" as they are.
func marshalArray(arr []*string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(arr); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// sweepLoops stops what still runs of the loops that have ended: each
// running item's task is cancelled (cancel, timeout, failFast, TooLarge,
// a finally step's deadline) and its entry ends with the step.
func sweepLoops(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, items itemTasks, p *plan, now metav1.Time) {
	for i := range len(wf.Spec.Steps) + len(wf.Spec.Finally) {
		s := stepStatus(wf, st, i)
		if !isLoop(wf, i) || !s.Phase.Finished() {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(items[i])) {
			if t := items[i][k]; !t.Status.Phase.Finished() && !t.Spec.Cancel {
				p.cancels = append(p.cancels, t)
			}
		}
		if s.ForEach == nil {
			continue
		}
		phase := schedv1.StepCancelled
		if s.Phase == schedv1.StepTimeout {
			phase = schedv1.StepTimeout
		}
		stopped := false
		for j := range s.ForEach.Items {
			if it := &s.ForEach.Items[j]; !it.Phase.Finished() {
				it.Phase, it.CompletionTime, it.Message, stopped = phase, &now, "stopped: its step ended", true
			}
		}
		if stopped {
			countItems(s.ForEach)
		}
	}
}

// dropCreates takes back the creates of p, when the workflow fails before
// they are made: steps go back to Waiting, and items are forgotten (a
// loop that started none of them goes back to Waiting).
func dropCreates(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, p *plan) {
	for _, c := range p.creates {
		s := stepStatus(wf, st, c.step)
		if !c.loop {
			s.Phase, s.TaskName, s.StartTime = schedv1.StepWaiting, "", nil
			continue
		}
		forgetItem(s, c.item)
		if len(s.ForEach.Items) == 0 && s.Phase == schedv1.StepPending {
			s.Phase, s.StartTime, s.ForEach, s.Message = schedv1.StepWaiting, nil, nil, ""
		}
	}
	p.creates = nil
}

// forgetItem removes item k, whose task was not created, from loop s.
func forgetItem(s *schedv1.StepStatus, k int) {
	s.ForEach.Items = slices.DeleteFunc(s.ForEach.Items, func(it schedv1.ItemStatus) bool { return int(it.Index) == k })
	countItems(s.ForEach)
}

// itemFailed records that item c, whose task the API server did not
// create, failed with msg: no more items start, and the step fails once
// its running items end.
func itemFailed(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, c stepCreate, msg string, now metav1.Time) {
	s := stepStatus(wf, st, c.step)
	it := itemStatus(s.ForEach, c.item)
	it.Phase, it.CompletionTime, it.Message = schedv1.StepFailed, &now, clipTo(msg, maxItemMessage)
	countItems(s.ForEach)
	if !s.Phase.Finished() {
		settleLoop(wf, s, c.step, nil, now)
	}
}

// itemWaitingForQuota forgets item c, whose task a full quota refused: it
// starts with the next items once the quota has room.
func itemWaitingForQuota(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, c stepCreate, msg string) {
	s := stepStatus(wf, st, c.step)
	forgetItem(s, c.item)
	s.Message = loopProgress(s.ForEach) + "; waiting for quota: " + msg
	what := fmt.Sprintf("step %d (%s)", c.step, stepName(wf, c.step))
	if c.step >= len(wf.Spec.Steps) {
		what = fmt.Sprintf("finally step %d (%s)", c.step-len(wf.Spec.Steps), stepName(wf, c.step))
	}
	running(st, fmt.Sprintf("%s: item %d is waiting for quota: %s", what, c.item, msg))
	st.Reason = schedv1.ReasonQuotaExceeded
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonQuotaExceeded, Message: st.Message})
}

// itemTaskName is the AgentTask of item k of step i.
func itemTaskName(wf *schedv1.Workflow, i, k int) string {
	if n := len(wf.Spec.Steps); i >= n {
		return names.FinallyItemTask(wf.Name, i-n, wf.Spec.Finally[i-n].Name, k)
	}
	return names.ItemTask(wf.Name, i, wf.Spec.Steps[i].Name, k)
}

// newItemTask builds the AgentTask of item k of loop i, with ${item} the
// item and the other references resolved as newStepTask resolves them.
func newItemTask(wf *schedv1.Workflow, i int, st *schedv1.WorkflowStatus, k int, item string) (*schedv1.AgentTask, error) {
	v := stepValues(wf, i, st)
	v.Loop, v.Item = true, item
	t, err := buildTask(wf, i, v, itemTaskName(wf, i, k))
	if err != nil {
		return nil, err
	}
	t.Labels[schedv1.LabelWorkflowItem] = strconv.Itoa(k)
	bindWorkspaces(wf, st, t)
	return t, nil
}

// noItems are the loops that succeeded without items: every output of
// theirs reads [].
func noItems(st *schedv1.WorkflowStatus) map[int]bool {
	var out map[int]bool
	for i, s := range append(slices.Clip(st.Steps), st.Finally...) {
		if s.ForEach != nil && s.ForEach.Total == 0 && s.Phase == schedv1.StepSucceeded {
			if out == nil {
				out = map[int]bool{}
			}
			out[i] = true
		}
	}
	return out
}

// clipTo cuts msg to n bytes, on a rune boundary.
func clipTo(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// isItemsError reports an error about a forEach list.
func isItemsError(err error) bool {
	var ie *substitution.ItemsError
	return errors.As(err, &ie)
}
