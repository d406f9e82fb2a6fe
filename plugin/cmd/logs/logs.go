// Package logs implements `kubectl sched logs`: the logs of every pod of an
// app (or one of its services), of every attempt of a task, or of every
// step of a workflow, each line prefixed with where it came from, as stern
// does. With -f it follows: new pods are picked up, pods that go away are
// dropped, and for a task or workflow it ends when they do.
package logs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/podlogs"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

// Options for `kubectl sched logs`.
type Options struct {
	kube.ClientOptions

	// Target is NAME (an app, else a task, else a workflow) or KIND/NAME.
	Target string
	// Service is the second argument: an app's SERVICE, or a workflow's
	// STEP.
	Service string
	// Item is the item of a forEach STEP, -1 for every item.
	Item       int
	Follow     bool
	Since      time.Duration
	Tail       int64
	Timestamps bool
	Container  string
	// Previous shows each container's last instance that ended.
	Previous bool

	kind  *kinds.Kind // nil: find it by name
	name  string
	color bool
}

// logKinds are the kinds with pods of their own in the user's namespace.
var logKinds = []kinds.Kind{kinds.UserDeployment, kinds.AgentTask, kinds.Workflow}

// NewCommand returns `kubectl sched logs`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c, Tail: -1, Item: -1}
	cmd := &cobra.Command{
		Use:   "logs (APP [SERVICE] | KIND/NAME | workflow/NAME [STEP [--item N]]) [-f | -p] [--since D] [--tail N] [--timestamps] [-c CONTAINER]",
		Short: "Print the logs of every pod of an app, task or workflow",
		Long: `Print the logs of every pod of a UserDeployment (or of one SERVICE), of
every attempt of an AgentTask, or of every step of a Workflow in order (or
of one STEP; of one item of a forEach step with --item N, from 0).
Each line starts with where it came from: [SERVICE POD] for an app,
[POD] for a task, [STEP POD] for a workflow, [STEP[N] POD] for item N of a
forEach step (coloured on a terminal unless NO_COLOR is set). Control characters in a line (escape sequences, carriage
returns) are shown escaped, never sent to the terminal: 'kubectl logs POD'
gives a container's raw bytes.

NAME is looked up as an app, then a task, then a workflow; write
userdeployment/NAME, agenttask/NAME or workflow/NAME (or ud/, at/, wf/) to
choose. With -f the command follows: pods that start are picked up and pods
that go away are dropped; for an app it runs until interrupted, for a task
or workflow until it finishes.

With -p (--previous) it shows, for an app, the log of each container's last
instance that ended: why a crash-looping service ended. That is the
instance before the current one, as with 'kubectl logs -p', or the current
one while it waits to be restarted (the kubelet keeps one ended instance
per container). Containers that never ended are named on stderr and
skipped. A task's or workflow's attempts are pods of their own, which the
command shows without -p.

A task's pods go once it is done with them: a succeeded task's after the
cluster's --succeeded-pod-retention (10m unless an admin set it), older
attempts' as it retries. Before a pod goes, the operator keeps the end of
its log (the last 500 lines, at most 32 KiB) in the task's status; for a
pod that is gone the command prints that, in its place among the others,
after a line "--- pod POD is gone: ... kept by the operator ... ---" that
says whether it is cut. --tail applies to it; --since and --timestamps do
not (it has no timestamps). A pod on a simulated (kwok) node has no logs;
the command says so for that pod and goes on. It exits 8 when no pod had
logs to show.`,
		Example: `  # Every service of app shop, following
  kubectl sched logs shop -f

  # Its api service, the last 10 lines of each pod, with timestamps
  kubectl sched logs shop api --tail 10 --timestamps

  # Why app shop's crashing containers ended last time
  kubectl sched logs shop -p

  # Every step of workflow release, in order
  kubectl sched logs workflow/release

  # Item 3 of its forEach step deploy
  kubectl sched logs workflow/release deploy --item 3`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.CompleteNames(kinds.UserDeployment, 1),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.BoolVarP(&o.Follow, "follow", "f", false, "Follow the logs: pick up new pods, drop pods that go away.")
	f.DurationVar(&o.Since, "since", 0, "Only lines newer than this, e.g. 5m (0: all).")
	f.Int64Var(&o.Tail, "tail", -1, "Lines of recent log per container; -1 shows all.")
	f.BoolVar(&o.Timestamps, "timestamps", false, "Start each line with its RFC 3339 timestamp.")
	f.StringVarP(&o.Container, "container", "c", "", "Only this container (default: every container of an app's pods; a task's \"task\" container).")
	f.BoolVarP(&o.Previous, "previous", "p", false, "For an app: the log of each container's last instance that ended (a crashed one's).")
	f.IntVar(&o.Item, "item", -1, "For a workflow's forEach STEP: only item N (from 0).")
	return cmd
}

// Complete parses the target and builds the clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.Target = args[0]
	if len(args) > 1 {
		o.Service = args[1]
	}
	o.name = o.Target
	if kindName, name, ok := strings.Cut(o.Target, "/"); ok {
		k, found := kinds.Lookup(kindName)
		if !found || !slices.ContainsFunc(logKinds, func(l kinds.Kind) bool { return l.Kind == k.Kind }) {
			return cmdutil.Usage("Name a userdeployment (ud), agenttask (at) or workflow (wf): kubectl sched logs ud/shop.",
				"logs cannot show %q: only apps, tasks and workflows have pods of their own", kindName)
		}
		o.kind, o.name = &k, name
	}
	o.color = printing.Color(o.Out)
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.name == "" {
		return cmdutil.Usage("kubectl sched logs NAME, or KIND/NAME.", "no name in %q", o.Target)
	}
	if o.Tail < -1 {
		return cmdutil.Usage("Use --tail N with N >= 0, or -1 for all.", "--tail must be -1 or more, got %d", o.Tail)
	}
	if o.Since < 0 {
		return cmdutil.Usage("Use a positive duration such as 5m.", "--since must not be negative, got %s", o.Since)
	}
	if o.Service != "" && o.kind != nil && o.kind.Kind != kinds.UserDeployment.Kind && o.kind.Kind != kinds.Workflow.Kind {
		return cmdutil.Usage("SERVICE applies to an app, STEP to a workflow (workflow/NAME STEP).", "%s/%s has no services or steps", o.kind.Singular, o.name)
	}
	if o.Item != -1 && (o.Service == "" || o.kind == nil || o.kind.Kind != kinds.Workflow.Kind) {
		return cmdutil.Usage("kubectl sched logs workflow/NAME STEP --item N", "--item needs a workflow and its forEach STEP")
	}
	if o.Item < -1 {
		return cmdutil.Usage("Items are counted from 0.", "--item must be 0 or more, got %d", o.Item)
	}
	if o.Previous && o.Follow {
		return cmdutil.Usage("Drop -f: a previous container has ended, so its log is printed whole.", "--previous and --follow cannot be combined")
	}
	if o.Previous && o.kind != nil && o.kind.Kind != kinds.UserDeployment.Kind {
		return previousNotForTasks(*o.kind, o.name)
	}
	return nil
}

// previousNotForTasks: a task's pods never restart a container; each
// attempt is a pod of its own, which logs without -p already shows.
func previousNotForTasks(k kinds.Kind, name string) error {
	return cmdutil.Usage(fmt.Sprintf("'kubectl sched logs %s/%s' shows every attempt, failed ones included.", k.Singular, name),
		"--previous applies to an app: %s %s runs each attempt in a pod of its own and never restarts a container", k.Singular, name)
}

// Run finds the object, then prints or follows its pods' logs.
func (o *Options) Run(ctx context.Context) error {
	src, err := o.resolve(ctx)
	if err != nil {
		return err
	}
	if o.Previous && src.kind.Kind != kinds.UserDeployment.Kind {
		return previousNotForTasks(src.kind, src.name)
	}
	if o.Follow {
		return o.follow(ctx, src)
	}
	return o.printAll(ctx, src)
}

// source is one object's pods and how to label their lines.
type source struct {
	kind     kinds.Kind
	name     string
	selector labels.Selector
	// container chooses the containers of a pod.
	containers func(*corev1.Pod) []string
	// prefix names a pod's lines, from its labels (or its task's) and
	// its name.
	prefix func(labels map[string]string, pod string) string
	// order sorts pods for printing, from their labels (or their task's):
	// by service or step, then start.
	order func(labels map[string]string) string
	// finished reports a task or workflow that ended (follow stops).
	finished func(context.Context) <-chan struct{}
	// of names a task in messages: "agenttask NAME", "step NAME" of a
	// workflow, "item N of step NAME".
	of func(*schedv1.AgentTask) string
	// tasks lists the tasks whose pods these are, for what the operator
	// kept of their gone pods' logs and which pods it deleted after they
	// succeeded; nil for an app.
	tasks func(context.Context) ([]schedv1.AgentTask, error)
}

// keptLog is what the operator kept of a gone pod's log, with the labels
// of its task (a workflow's step and item).
type keptLog struct {
	labels map[string]string
	rec    schedv1.KeptLog
}

// deletedPods is a succeeded task whose pods the operator deleted, with
// its PodDeleted condition.
type deletedPods struct {
	// of names the task: "agenttask NAME", or "step NAME" of a workflow.
	of        string
	task      string
	condition metav1.Condition
}

func (o *Options) resolve(ctx context.Context) (*source, error) {
	ns := o.Clients.Namespace
	candidates := logKinds
	if o.kind != nil {
		candidates = []kinds.Kind{*o.kind}
	} else if o.Service != "" {
		candidates = logKinds[:1]
	}
	type hit struct {
		kind kinds.Kind
		obj  client.Object
	}
	var found []hit
	for _, k := range candidates {
		obj := k.New()
		err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.name}, obj)
		if apierrors.IsNotFound(err) && !cmdutil.NotInstalled(err) {
			continue
		}
		if err != nil {
			return nil, cmdutil.API(err, "get", k.What(ns, o.name))
		}
		found = append(found, hit{k, obj})
	}
	switch len(found) {
	case 0:
		if len(candidates) == 1 {
			return nil, cmdutil.Errorf(cmdutil.ExitNotFound, "Check the name and the namespace (-n).", "%s not found in namespace %q", candidates[0].What(ns, o.name), ns)
		}
		return nil, cmdutil.Errorf(cmdutil.ExitNotFound, "Check the name and the namespace (-n); 'kubectl sched get' lists what there is.",
			"no app, task or workflow named %q in namespace %q", o.name, ns)
	case 1:
	default:
		var choices []string
		for _, h := range found {
			choices = append(choices, h.kind.Singular+"/"+o.name)
		}
		return nil, cmdutil.Usage("Choose one: "+strings.Join(choices, ", ")+".", "%q names more than one kind of object in namespace %q", o.name, ns)
	}
	return o.sourceFor(found[0].kind, found[0].obj)
}

func (o *Options) sourceFor(k kinds.Kind, obj client.Object) (*source, error) {
	src := &source{kind: k, name: obj.GetName()}
	var err error
	switch t := obj.(type) {
	case *schedv1.UserDeployment:
		err = o.appSource(src, t)
	case *schedv1.AgentTask:
		o.taskSource(src, t)
	case *schedv1.Workflow:
		err = o.workflowSource(src, t)
	}
	if err != nil {
		return nil, err
	}
	return src, nil
}

// taskContainer is the container of a task's pod, or -c's.
func (o *Options) taskContainer(*corev1.Pod) []string {
	return []string{o.containerOr(podlogs.TaskContainer)}
}

// appSource: an app's pods, or its service's, each container's lines
// behind [SERVICE POD].
func (o *Options) appSource(src *source, t *schedv1.UserDeployment) error {
	set := labels.Set{schedv1.LabelUserDeployment: t.Name}
	if o.Service != "" {
		if !slices.ContainsFunc(t.Spec.Services, func(s schedv1.ServiceSpec) bool { return s.Name == o.Service }) {
			var known []string
			for _, s := range t.Spec.Services {
				known = append(known, s.Name)
			}
			return cmdutil.Errorf(cmdutil.ExitNotFound, "Its services: "+strings.Join(known, ", ")+".",
				"userdeployment %s has no service %q", t.Name, o.Service)
		}
		set[schedv1.LabelService] = o.Service
	}
	src.selector = labels.SelectorFromSet(set)
	src.containers = func(p *corev1.Pod) []string {
		if o.Container != "" {
			return []string{o.Container}
		}
		var cs []string
		for _, c := range p.Spec.Containers {
			cs = append(cs, c.Name)
		}
		return cs
	}
	src.prefix = func(labels map[string]string, pod string) string { return labels[schedv1.LabelService] + " " + pod }
	src.order = func(labels map[string]string) string { return labels[schedv1.LabelService] }
	return nil
}

// taskSource: a task's pods, one per attempt, behind [POD].
func (o *Options) taskSource(src *source, t *schedv1.AgentTask) {
	// The label holds the Job's name, which may be shorter than the task's.
	src.selector = labels.SelectorFromSet(labels.Set{schedv1.LabelAgentTask: names.Job(t.Name)})
	src.containers, src.prefix = o.taskContainer, func(_ map[string]string, pod string) string { return pod }
	src.order = func(map[string]string) string { return "" }
	src.finished = o.finishedWhen(src.kind, t, func(obj client.Object) bool { return obj.(*schedv1.AgentTask).Status.Phase.Finished() })
	src.tasks = func(context.Context) ([]schedv1.AgentTask, error) { return []schedv1.AgentTask{*t}, nil }
	src.of = func(*schedv1.AgentTask) string { return "agenttask " + t.Name }
}

// workflowSource: the pods of a workflow's steps, or of one step or item,
// in step order, behind [STEP POD] or [STEP[N] POD].
func (o *Options) workflowSource(src *source, t *schedv1.Workflow) error {
	set, err := o.workflowPods(t)
	if err != nil {
		return err
	}
	src.selector = labels.SelectorFromSet(set)
	stepOf := func(labels map[string]string) string {
		label := labels[schedv1.LabelWorkflowStep]
		if j, ok := names.ParseFinallyStep(label); ok && j < len(t.Spec.Finally) {
			return t.Spec.Finally[j].Name
		} else if i, err := strconv.Atoi(label); err == nil && i >= 0 && i < len(t.Spec.Steps) {
			return t.Spec.Steps[i].Name
		}
		return "step-" + label
	}
	stepName := func(labels map[string]string) string {
		name := stepOf(labels)
		if item, ok := labels[schedv1.LabelWorkflowItem]; ok {
			name += "[" + item + "]"
		}
		return name
	}
	src.containers = o.taskContainer
	src.prefix = func(labels map[string]string, pod string) string { return stepName(labels) + " " + pod }
	src.order = func(labels map[string]string) string {
		// The finally steps after every step.
		label := labels[schedv1.LabelWorkflowStep]
		if j, ok := names.ParseFinallyStep(label); ok {
			return fmt.Sprintf("f%06d", j)
		}
		i, _ := strconv.Atoi(label)
		item, _ := strconv.Atoi(labels[schedv1.LabelWorkflowItem])
		return fmt.Sprintf("%06d-%03d", i, item)
	}
	src.finished = o.finishedWhen(src.kind, t, func(obj client.Object) bool { return obj.(*schedv1.Workflow).Status.Phase.Finished() })
	src.tasks = func(ctx context.Context) ([]schedv1.AgentTask, error) {
		// The tasks of the pods asked for: a step's and its items' carry
		// the labels their pods do. A page at a time: each holds its
		// pods' kept logs.
		var out []schedv1.AgentTask
		opts := []client.ListOption{client.InNamespace(t.Namespace), client.MatchingLabels(set), client.Limit(50)}
		for {
			var tasks schedv1.AgentTaskList
			if err := o.Clients.Client.List(ctx, &tasks, opts...); err != nil {
				return nil, err
			}
			for i := range tasks.Items {
				if metav1.IsControlledBy(&tasks.Items[i], t) {
					out = append(out, tasks.Items[i])
				}
			}
			if tasks.Continue == "" {
				return out, nil
			}
			opts = append(opts[:3:3], client.Continue(tasks.Continue))
		}
	}
	src.of = func(task *schedv1.AgentTask) string {
		of := "step " + stepOf(task.Labels)
		if item, ok := task.Labels[schedv1.LabelWorkflowItem]; ok {
			of = "item " + item + " of " + of
		}
		return of
	}
	return nil
}

// gone sorts out what the tasks of src say of their pods that are not in
// live: the kept logs of those pods, in order, and the tasks whose pods
// the operator deleted after they succeeded and kept no log of.
func (o *Options) gone(src *source, tasks []schedv1.AgentTask, live map[string]bool) ([]keptLog, []deletedPods) {
	var kept []keptLog
	var deleted []deletedPods
	// Only the task container's log is kept.
	keeps := o.Container == "" || o.Container == podlogs.TaskContainer
	for i := range tasks {
		task := &tasks[i]
		for _, rec := range task.Status.Logs {
			if keeps && !live[rec.Pod] {
				kept = append(kept, keptLog{labels: task.Labels, rec: rec})
			}
		}
		if c := podDeleted(task); c != nil && (!keeps || schedv1.KeptLogOf(task.Status.Logs, task.Status.PodName) == nil) {
			deleted = append(deleted, deletedPods{of: src.of(task), task: task.Name, condition: *c})
		}
	}
	slices.SortFunc(deleted, func(a, b deletedPods) int {
		return a.condition.LastTransitionTime.Compare(b.condition.LastTransitionTime.Time)
	})
	return kept, deleted
}

// podDeleted is a task's PodDeleted condition when it is True.
func podDeleted(t *schedv1.AgentTask) *metav1.Condition {
	if c := meta.FindStatusCondition(t.Status.Conditions, schedv1.ConditionPodDeleted); c != nil && c.Status == metav1.ConditionTrue {
		return c
	}
	return nil
}

// workflowPods selects the pods of workflow wf: every step's, or STEP's,
// or one item's of a forEach STEP.
func (o *Options) workflowPods(wf *schedv1.Workflow) (labels.Set, error) {
	set := labels.Set{schedv1.LabelWorkflow: names.Join(wf.Name)}
	if o.Service == "" {
		return set, nil
	}
	var step *schedv1.WorkflowStep
	var known []string
	for i := range wf.Spec.Steps {
		known = append(known, wf.Spec.Steps[i].Name)
		if wf.Spec.Steps[i].Name == o.Service {
			step, set[schedv1.LabelWorkflowStep] = &wf.Spec.Steps[i], strconv.Itoa(i)
		}
	}
	for j := range wf.Spec.Finally {
		known = append(known, wf.Spec.Finally[j].Name)
		if wf.Spec.Finally[j].Name == o.Service {
			step, set[schedv1.LabelWorkflowStep] = &wf.Spec.Finally[j], names.FinallyStep(j)
		}
	}
	switch {
	case step == nil:
		return nil, cmdutil.Errorf(cmdutil.ExitNotFound, "Its steps: "+strings.Join(known, ", ")+".", "workflow %s has no step %q", wf.Name, o.Service)
	case o.Item < 0:
	case step.ForEach == nil:
		return nil, cmdutil.Usage(fmt.Sprintf("Drop --item: 'kubectl sched logs workflow/%s %s' shows its task.", wf.Name, step.Name), "step %s of workflow %s has no forEach, so no items", step.Name, wf.Name)
	case o.Item >= schedv1.MaxItems:
		return nil, cmdutil.Usage("Items are counted from 0.", "step %s has at most %d items; --item %d is past them", step.Name, schedv1.MaxItems, o.Item)
	default:
		set[schedv1.LabelWorkflowItem] = strconv.Itoa(o.Item)
	}
	return set, nil
}

func (o *Options) containerOr(def string) string {
	if o.Container != "" {
		return o.Container
	}
	return def
}

// finishedWhen watches of, an object of kind k; the channel closes once
// done says so (or the watch ends).
func (o *Options) finishedWhen(k kinds.Kind, of client.Object, done func(client.Object) bool) func(context.Context) <-chan struct{} {
	return func(ctx context.Context) <-chan struct{} {
		ch := make(chan struct{})
		go func() {
			defer close(ch)
			obj := k.New()
			obj.SetNamespace(of.GetNamespace())
			obj.SetName(of.GetName())
			_ = waitfor.Object(ctx, o.Clients.Client, obj, k.NewList(), func(obj client.Object) (bool, error) { return done(obj), nil })
		}()
		return ch
	}
}

func (o *Options) logOptions(container string, follow, previous bool) corev1.PodLogOptions {
	opts := corev1.PodLogOptions{Container: container, Follow: follow, Timestamps: o.Timestamps, Previous: previous}
	if o.Tail >= 0 {
		opts.TailLines = ptr.To(o.Tail)
	}
	if o.Since > 0 {
		opts.SinceSeconds = ptr.To(int64(o.Since.Seconds()))
	}
	return opts
}

// entry is one pod to print: live, or gone with what the operator kept
// of its log.
type entry struct {
	labels  map[string]string
	name    string
	created metav1.Time
	pod     *corev1.Pod
	kept    *schedv1.KeptLog
}

// entries are the live pods and the kept logs of gone ones, in order: by
// service or step, then creation.
func entries(src *source, pods []corev1.Pod, kept []keptLog) []entry {
	var out []entry
	for i := range pods {
		out = append(out, entry{labels: pods[i].Labels, name: pods[i].Name, created: pods[i].CreationTimestamp, pod: &pods[i]})
	}
	for i := range kept {
		e := entry{labels: kept[i].labels, name: kept[i].rec.Pod, kept: &kept[i].rec}
		if kept[i].rec.CreationTime != nil {
			e.created = *kept[i].rec.CreationTime
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if oa, ob := src.order(a.labels), src.order(b.labels); oa != ob {
			return oa < ob
		}
		if !a.created.Equal(&b.created) {
			return a.created.Before(&b.created)
		}
		return a.name < b.name
	})
	return out
}

// listGone lists src's pods, and what its tasks say of the pods that are
// gone (none for an app).
func (o *Options) listGone(ctx context.Context, src *source) ([]corev1.Pod, []keptLog, []deletedPods, error) {
	ns := o.Clients.Namespace
	list, err := o.Clients.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: src.selector.String()})
	if err != nil {
		return nil, nil, nil, cmdutil.API(err, "list", "pods")
	}
	if src.tasks == nil {
		return list.Items, nil, nil, nil
	}
	tasks, err := src.tasks(ctx)
	if err != nil {
		// Only the gone pods are lost: the logs that exist still show.
		fmt.Fprintln(o.ErrOut, "warning: cannot read what the operator kept of the gone pods' logs: "+printing.Line(cmdutil.API(err, "list", kinds.AgentTask.Plural).Error()))
		return list.Items, nil, nil, nil
	}
	live := map[string]bool{}
	for _, p := range list.Items {
		live[p.Name] = true
	}
	kept, deleted := o.gone(src, tasks, live)
	return list.Items, kept, deleted, nil
}

// printKept prints what the operator kept of a gone pod's log behind the
// pod's prefix, after a line that says it is the kept log (and whether it
// is cut). It reports whether there was text to print.
func (o *Options) printKept(w *prefixWriter, src *source, e *entry) bool {
	note, ok := podlogs.KeptNote(e.kept)
	if !ok {
		fmt.Fprintln(o.ErrOut, "warning: "+printing.Line(note))
		return false
	}
	prefix := src.prefix(e.labels, e.name)
	w.line(prefix, "--- "+note+" ---")
	lw := w.For(prefix)
	_ = podlogs.CopyKept(lw, e.kept.Log, o.Tail)
	_ = lw.Close()
	return true
}

// printAll prints the logs of the pods that exist now, and what the
// operator kept of those that are gone, in order.
func (o *Options) printAll(ctx context.Context, src *source) error {
	pods, kept, deleted, err := o.listGone(ctx, src)
	if err != nil {
		return err
	}
	all := entries(src, pods, kept)
	if len(all) == 0 && len(deleted) > 0 {
		return o.podsDeletedError(src, deleted)
	}
	if len(all) == 0 {
		return cmdutil.Errorf(cmdutil.ExitError, fmt.Sprintf("'kubectl sched describe %s %s' shows why; -f waits for them.", src.kind.Singular, src.name),
			"%s %s has no pods", src.kind.Singular, src.name)
	}
	for _, d := range deleted {
		fmt.Fprintln(o.ErrOut, "warning: "+d.String())
	}
	if len(kept) > 0 && (o.Since > 0 || o.Timestamps) {
		fmt.Fprintln(o.ErrOut, "warning: --since and --timestamps do not apply to the kept logs of gone pods, which the operator keeps without timestamps")
	}
	w := newPrefixWriter(o.Out, o.color)
	shown, noLogs, restarted := 0, 0, 0 // restarted: containers with an ended instance
	for i := range all {
		if all[i].kept != nil {
			if o.printKept(w, src, &all[i]) {
				shown++
			} else {
				noLogs++
			}
			continue
		}
		p := all[i].pod
		if !started(p) {
			fmt.Fprintf(o.ErrOut, "pod %s has not started yet\n", p.Name)
			continue
		}
		for _, c := range src.containers(p) {
			previous := false
			if o.Previous {
				var ended bool
				if previous, ended = lastEnded(p, c); !ended {
					fmt.Fprintf(o.ErrOut, "pod %s: container %s has not ended or restarted: no previous log\n", printing.Line(p.Name), printing.Line(c))
					continue
				}
				restarted++
			}
			err := o.stream(ctx, w, p, c, src.prefix(p.Labels, p.Name), false, previous)
			var nl *podlogs.NoLogsError
			switch {
			case errors.As(err, &nl):
				noLogs++
				fmt.Fprintln(o.ErrOut, "warning: "+printing.Line(nl.Error()))
			case apierrors.IsNotFound(err):
				fmt.Fprintf(o.ErrOut, "warning: pod %s is gone\n", p.Name)
			case o.Previous && apierrors.IsBadRequest(err):
				// The kubelet no longer holds that instance.
				fmt.Fprintln(o.ErrOut, "warning: pod "+printing.Line(p.Name)+": "+printing.Line(err.Error()))
			case err != nil:
				return err
			default:
				shown++
			}
		}
	}
	if o.Previous && restarted == 0 {
		return cmdutil.Errorf(cmdutil.ExitError, fmt.Sprintf("Without -p, the logs of the running containers; 'kubectl sched describe %s %s' shows its state.", src.kind.Singular, src.name),
			"no container of %s %s has ended or restarted, so there is no previous log", src.kind.Singular, src.name)
	}
	if shown == 0 && noLogs > 0 {
		return cmdutil.Errorf(cmdutil.ExitNoLogs, fmt.Sprintf("'kubectl sched describe %s %s' shows its state.", src.kind.Singular, src.name),
			"no pod of %s %s has logs to show", src.kind.Singular, src.name)
	}
	return nil
}

// String says whose pods were deleted, why and when.
func (d deletedPods) String() string {
	return fmt.Sprintf("%s: %s (deleted at %s)", d.of, printing.Line(d.condition.Message), d.condition.LastTransitionTime.UTC().Format(time.RFC3339))
}

// podsDeletedError: every pod of src is gone, deleted by the operator
// once its task succeeded. Exit 8, as when no pod has logs to show: the
// cluster is fine, and the outputs are in the status.
func (o *Options) podsDeletedError(src *source, deleted []deletedPods) error {
	hint := fmt.Sprintf("'kubectl sched describe %s %s' shows the outputs. Succeeded tasks' pods are kept for the cluster's --succeeded-pod-retention; an admin keeps them longer with 'kubectl sched install --succeeded-pod-retention 1h' (0: as long as the task).", src.kind.Singular, src.name)
	// A task, or the one step or item asked for.
	if src.kind.Kind == kinds.AgentTask.Kind || len(deleted) == 1 && o.Service != "" {
		return cmdutil.Errorf(cmdutil.ExitNoLogs, hint, "%s", deleted[0].String())
	}
	for _, d := range deleted {
		fmt.Fprintln(o.ErrOut, "warning: "+d.String())
	}
	if o.Service != "" {
		return cmdutil.Errorf(cmdutil.ExitNoLogs, hint, "step %s of %s %s has no pods left: the operator deleted the pods of its %d succeeded item(s), with their logs", o.Service, src.kind.Singular, src.name, len(deleted))
	}
	what := fmt.Sprintf("%d succeeded step(s)", len(deleted))
	if items := len(slices.DeleteFunc(slices.Clone(deleted), func(d deletedPods) bool { return !strings.HasPrefix(d.of, "item ") })); items > 0 {
		what = fmt.Sprintf("%d succeeded step(s) and forEach item(s)", len(deleted))
	}
	return cmdutil.Errorf(cmdutil.ExitNoLogs, hint, "%s %s has no pods left: the operator deleted the pods of its %s, with their logs", src.kind.Singular, src.name, what)
}

// lastEnded finds container c's last instance that ended: the current one
// when it has ended (a crashed container waiting to be restarted; the
// kubelet keeps one ended instance per container, so the one before is
// gone), else the one before it (previous). ended is false when no
// instance has ended.
func lastEnded(p *corev1.Pod, c string) (previous, ended bool) {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if cs.Name != c {
			continue
		}
		switch {
		case cs.State.Terminated != nil:
			return false, true
		case cs.LastTerminationState.Terminated != nil:
			return true, true
		}
	}
	return false, false
}

// stream copies one container's log, line by line with the prefix.
func (o *Options) stream(ctx context.Context, w *prefixWriter, p *corev1.Pod, container, prefix string, follow, previous bool) error {
	lw := w.For(prefix)
	defer lw.Close()
	err := podlogs.Stream(ctx, o.Clients.Kube, p.Namespace, p.Name, o.logOptions(container, follow, previous), lw)
	var nl *podlogs.NoLogsError
	if err != nil && !errors.As(err, &nl) && !apierrors.IsNotFound(err) && !(previous && apierrors.IsBadRequest(err)) {
		return cmdutil.API(err, "get", "pods/log "+p.Name)
	}
	return err
}

// started: some container of the pod runs or ran, so it may have logs.
func started(p *corev1.Pod) bool {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// drainTimeout bounds how long the last streams of a finished task or
// workflow may go on.
const drainTimeout = time.Minute

// follow streams every pod that starts until ctx ends, or the task or
// workflow finishes and its streams have drained.
func (o *Options) follow(ctx context.Context, src *source) error {
	// Streams outlive the pod watch: a finished container's log ends on
	// its own, and cutting it short would lose its last lines.
	streamCtx, cancelStreams := context.WithCancel(ctx)
	defer cancelStreams()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if src.finished != nil {
		done := src.finished(watchCtx)
		go func() {
			select {
			case <-done:
				// The last attempt's pod may be seen just after.
				time.Sleep(time.Second)
				stopWatch()
			case <-watchCtx.Done():
			}
		}()
	}
	w := newPrefixWriter(o.Out, o.color)
	if src.tasks != nil {
		// The pods gone already: what the operator kept of their logs,
		// before the live ones are followed.
		_, kept, deleted, err := o.listGone(ctx, src)
		if err != nil {
			return err
		}
		for _, d := range deleted {
			fmt.Fprintln(o.ErrOut, "warning: "+d.String())
		}
		gone := entries(src, nil, kept)
		for i := range gone {
			o.printKept(w, src, &gone[i])
		}
	}
	cancels := map[string]context.CancelFunc{} // by pod UID and container
	var wg sync.WaitGroup
	ns := o.Clients.Namespace
	lw := waitfor.ListWatch(o.Clients.Client, &corev1.PodList{}, ns, metav1.ListOptions{LabelSelector: src.selector.String()})
	err := waitfor.Condition(watchCtx, lw, &corev1.Pod{}, nil, func(ev apiwatch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		for _, c := range src.containers(p) {
			key := string(p.UID) + "/" + c
			if ev.Type == apiwatch.Deleted {
				if cancel := cancels[key]; cancel != nil {
					cancel()
				}
				continue
			}
			if cancels[key] != nil || !started(p) {
				continue
			}
			sctx, cancel := context.WithCancel(streamCtx)
			cancels[key] = cancel
			wg.Add(1)
			go func(p *corev1.Pod, c string) {
				defer wg.Done()
				if err := o.stream(sctx, w, p, c, src.prefix(p.Labels, p.Name), true, false); err != nil && sctx.Err() == nil {
					fmt.Fprintln(o.ErrOut, "warning: "+printing.Line(err.Error()))
				}
			}(p.DeepCopy(), c)
		}
		return false, nil
	})
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		fmt.Fprintln(o.ErrOut, "warning: gave up waiting for the rest of the logs")
		cancelStreams()
		<-drained
	}
	if err != nil && watchCtx.Err() == nil {
		return cmdutil.API(err, "watch", "pods")
	}
	return nil
}
