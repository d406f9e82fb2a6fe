package describe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/liveview"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/taskfollow"
)

// describer fetches what a description shows besides the object itself.
type describer struct {
	ctx                context.Context
	clients            *kube.Clients
	kind               kinds.Kind
	schedulerNamespace string
}

// owned selects what the operator created for an object: its managed-by
// label plus the kind's label (api/v1alpha1/common_types.go).
func owned(kindLabel, value string) string {
	return labels.SelectorFromSet(labels.Set{schedv1.LabelManagedBy: schedv1.ManagedByValue, kindLabel: value}).String()
}

// listError is shown in place of a section the user may not read.
func listError(err error, resource string) string {
	err = cmdutil.API(err, "list", resource)
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return "<" + msg + ">"
}

func (d *describer) agentTask(w *printing.DescribeWriter, t *schedv1.AgentTask) {
	w.Header(t, "AgentTask")
	st := t.Status
	w.Field(0, "Phase", string(st.Phase))
	w.Optional(0, "Reason", st.Reason)
	w.Optional(0, "Message", printing.OneLine(st.Message))
	w.Line(0, "Task:")
	taskSpec(w, 1, t.Spec)
	w.Field(0, "Job", st.JobName)
	w.Field(0, "Pod", st.PodName)
	attempts := strconv.Itoa(int(st.Attempts))
	if limit := t.Spec.RetryLimit(); limit > 0 {
		attempts += fmt.Sprintf(" of %d", limit+1)
	}
	w.Field(0, "Attempts", attempts)
	if st.ExitCode != nil {
		w.Field(0, "Exit Code", strconv.Itoa(int(*st.ExitCode)))
	}
	// While it backs off: the message says why, this says when.
	w.Optional(0, "Next Attempt", timePtr(st.NextAttemptTime))
	w.Optional(0, "Start Time", timePtr(st.StartTime))
	w.Optional(0, "Completion Time", timePtr(st.CompletionTime))
	w.Optional(0, "Duration", elapsed(st.StartTime, st.CompletionTime))
	if ref := metav1.GetControllerOf(t); ref != nil && ref.Kind == "Workflow" && ref.APIVersion == schedv1.GroupVersion.String() {
		w.Field(0, "Expires", "with workflow "+ref.Name)
	} else {
		w.Optional(0, "Expires", Expires(st.Expiry, time.Now()))
	}
	repos(w, t)
	w.MapField(0, "Outputs", st.Outputs, ":\t")
	if t.Spec.Outputs != nil {
		w.Field(0, "Outputs From", t.Spec.Outputs.FromDir)
		w.MapField(0, "File Outputs", FileOutputs(st.FileOutputs), ":\t")
	}
	w.Conditions(st.Conditions)

	sel := owned(schedv1.LabelAgentTask, names.Job(t.Name))
	jobs, err := d.clients.Kube.BatchV1().Jobs(t.Namespace).List(d.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		w.Line(0, "Jobs:\t%s", listError(err, "jobs.batch"))
	} else {
		rows := [][]string{}
		for _, j := range jobs.Items {
			rows = append(rows, []string{j.Name, strconv.Itoa(int(j.Status.Active)), strconv.Itoa(int(j.Status.Succeeded)), strconv.Itoa(int(j.Status.Failed))})
		}
		w.Table(0, "Jobs", []string{"Name", "Active", "Succeeded", "Failed"}, rows)
	}
	d.pods(w, "Pods", t.Namespace, sel)
}

// repos lists the repositories a task clones, with the commit each ended
// on once the task has it.
func repos(w *printing.DescribeWriter, t *schedv1.AgentTask) {
	if len(t.Spec.Repos) == 0 {
		return
	}
	rows := make([][]string, 0, len(t.Spec.Repos))
	for _, r := range t.Spec.Repos {
		secret := ""
		if r.SecretRef != nil {
			secret = r.SecretRef.Name
		}
		rows = append(rows, []string{r.Name, r.URL, printing.OrDash(r.Ref), r.ClonePath(), printing.OrDash(secret),
			printing.OrDash(t.Status.Outputs[schedv1.RepoCommitOutput(r.Name)])})
	}
	w.Table(0, "Repositories", []string{"Name", "URL", "Ref", "Path", "Secret", "Commit"}, rows)
}

// taskSpec writes what a task runs; env values from Secrets stay references.
func taskSpec(w *printing.DescribeWriter, level int, s schedv1.AgentTaskSpec) {
	w.Field(level, "Image", s.Image)
	if len(s.Command) > 0 {
		w.Field(level, "Command", quoteArgs(s.Command))
	}
	if len(s.Args) > 0 {
		w.Field(level, "Args", quoteArgs(s.Args))
	}
	if len(s.Env) > 0 {
		w.Line(level, "Environment:")
		for _, e := range s.Env {
			w.Line(level+1, "%s:\t%s", e.Name, envValue(e))
		}
	}
	if s.Timeout != nil {
		w.Field(level, "Timeout", s.Timeout.Duration.String())
	}
	w.Optional(level, "Retry", taskfollow.RetryPolicy(s))
	if s.TTLAfterFinished != nil {
		cleanup := s.Cleanup
		if cleanup == "" {
			cleanup = schedv1.CleanupJob
		}
		w.Field(level, "TTL After Finished", fmt.Sprintf("%s (then delete the %s)", s.TTLAfterFinished.Duration, cleanup))
	}
	w.Optional(level, "Service Account", s.ServiceAccountName)
	if s.Placement != nil {
		w.Field(level, "Placement", placement(*s.Placement))
	}
	if s.Cancel {
		w.Field(level, "Cancel", "true")
	}
}

// envValue is kubectl describe's rendering: a literal, or where it comes from.
func envValue(e schedv1.EnvVar) string {
	vf := e.ValueFrom
	switch {
	case vf == nil:
		return e.Value
	case vf.SecretKeyRef != nil:
		return fmt.Sprintf("<set to the key '%s' in secret '%s'>", vf.SecretKeyRef.Key, vf.SecretKeyRef.Name)
	case vf.ConfigMapKeyRef != nil:
		return fmt.Sprintf("<set to the key '%s' of config map '%s'>", vf.ConfigMapKeyRef.Key, vf.ConfigMapKeyRef.Name)
	case vf.FieldRef != nil:
		return fmt.Sprintf("(%s:%s)", vf.FieldRef.APIVersion, vf.FieldRef.FieldPath)
	case vf.ResourceFieldRef != nil:
		return fmt.Sprintf("(%s)", vf.ResourceFieldRef.Resource)
	}
	return "<set from a reference>"
}

func placement(p schedv1.Placement) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("workloadType", string(p.WorkloadType))
	add("priority", string(p.Priority))
	add("nodePools", strings.Join(p.NodePools, ","))
	add("spot", string(p.Spot))
	if p.MultiZone {
		add("multiZone", "true")
	}
	if len(p.Tolerations) > 0 {
		add("tolerations", strconv.Itoa(len(p.Tolerations)))
	}
	add("cpuScheduler", p.CPUScheduler)
	return printing.OrNone(strings.Join(parts, " "))
}

func (d *describer) pods(w *printing.DescribeWriter, title, ns, selector string) {
	pods, err := d.clients.Kube.CoreV1().Pods(ns).List(d.ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		w.Line(0, "%s:\t%s", title, listError(err, "pods"))
		return
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	rows := [][]string{}
	for _, p := range pods.Items {
		ready, restarts := 0, int32(0)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready++
			}
			restarts += cs.RestartCount
		}
		rows = append(rows, []string{p.Name, string(p.Status.Phase), fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)), strconv.Itoa(int(restarts)), printing.OrNone(p.Spec.NodeName)})
	}
	w.Table(0, title, []string{"Name", "Phase", "Ready", "Restarts", "Node"}, rows)
}

func (d *describer) workflow(w *printing.DescribeWriter, wf *schedv1.Workflow) {
	w.Header(wf, "Workflow")
	st := wf.Status
	w.Field(0, "Phase", string(st.Phase))
	w.Field(0, "Progress", st.Progress)
	if st.Phase != "" && int(st.CurrentStep) < len(wf.Spec.Steps) {
		w.Field(0, "Current Step", fmt.Sprintf("%d (%s)", st.CurrentStep, wf.Spec.Steps[st.CurrentStep].Name))
	}
	w.Optional(0, "Reason", st.Reason)
	w.Optional(0, "Message", printing.OneLine(st.Message))
	if ref := wf.Spec.WorkflowTemplateRef; ref != nil {
		from := ref.String() + " (not copied in yet)"
		if ref.Resolved() {
			from = fmt.Sprintf("%s (resourceVersion %s, copied in when the run started)", ref, ref.ResourceVersion)
		}
		w.Field(0, "Template", from)
	}
	if wf.Spec.Timeout != nil {
		w.Field(0, "Timeout", wf.Spec.Timeout.Duration.String())
	}
	if wf.Spec.TTLAfterFinished != nil {
		w.Field(0, "TTL After Finished", wf.Spec.TTLAfterFinished.Duration.String())
	}
	if wf.Spec.Suspend && !st.Phase.Finished() {
		w.Field(0, "Suspended", "true (no new step starts: kubectl sched workflow resume "+wf.Name+")")
	}
	if m := st.Main; m != nil {
		w.Field(0, "Steps Ended", fmt.Sprintf("%s at %s: %s", m.Phase, timePtr(&m.Time), printing.OneLine(m.Message)))
	}
	w.Optional(0, "Start Time", timePtr(st.StartTime))
	w.Optional(0, "Completion Time", timePtr(st.CompletionTime))
	w.Optional(0, "Duration", elapsed(st.StartTime, st.CompletionTime))
	w.Optional(0, "Expires", Expires(st.Expiry, time.Now()))
	params := map[string]string{}
	for _, p := range wf.Spec.Params {
		params[p.Name] = p.Value
	}
	w.MapField(0, "Params", params, "=")
	if r := wf.Spec.RetryOf; r != nil {
		w.Field(0, "Retry Of", fmt.Sprintf("%s (from step %s)", r.Workflow, r.FromStep))
	}
	if by := wf.Annotations[schedv1.GroupName+"/retried-by"]; by != "" {
		w.Field(0, "Retried By", by)
	}
	w.Optional(0, "Requested By", wf.Spec.RequestedBy)

	headers, rows := stepRows(wf.Spec.Steps, st.Steps)
	w.Table(0, "Steps", headers, rows)
	if len(wf.Spec.Finally) > 0 {
		// Run once the steps above have ended, whatever happened.
		headers, rows := stepRows(wf.Spec.Finally, st.Finally)
		w.Table(0, "Finally", headers, rows)
	}
	itemTables(w, wf)
	d.workspaces(w, wf)
	if rows := approvalRows(wf); len(rows) > 0 {
		w.Table(0, "Approvals", []string{"Step", "Approvers", "Decision", "By", "Reason"}, rows)
	}
	w.Conditions(st.Conditions)

	var tasks schedv1.AgentTaskList
	sel, _ := labels.Parse(owned(schedv1.LabelWorkflow, names.Join(wf.Name)))
	if err := d.clients.Client.List(d.ctx, &tasks, client.InNamespace(wf.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		w.Line(0, "Step Tasks:\t%s", listError(err, "agenttasks."+schedv1.GroupName))
		return
	}
	slices.SortStableFunc(tasks.Items, func(a, b schedv1.AgentTask) int {
		// By step, then by item (as numbers: item 10 after item 9).
		return cmp.Or(strings.Compare(a.Labels[schedv1.LabelWorkflowStep], b.Labels[schedv1.LabelWorkflowStep]),
			cmp.Compare(len(a.Labels[schedv1.LabelWorkflowItem]), len(b.Labels[schedv1.LabelWorkflowItem])),
			strings.Compare(a.Labels[schedv1.LabelWorkflowItem], b.Labels[schedv1.LabelWorkflowItem]))
	})
	loops := slices.ContainsFunc(tasks.Items, func(t schedv1.AgentTask) bool { return t.Labels[schedv1.LabelWorkflowItem] != "" })
	rows = [][]string{}
	for _, t := range tasks.Items {
		exit := "-"
		if t.Status.ExitCode != nil {
			exit = strconv.Itoa(int(*t.Status.ExitCode))
		}
		row := []string{t.Name, printing.OrDash(t.Labels[schedv1.LabelWorkflowStep]), printing.OrDash(string(t.Status.Phase)), exit, strconv.Itoa(int(t.Status.Attempts)), printing.OrDash(t.Status.JobName)}
		if loops {
			row = slices.Insert(row, 2, printing.OrDash(t.Labels[schedv1.LabelWorkflowItem]))
		}
		rows = append(rows, row)
	}
	headers = []string{"Name", "Step", "Phase", "Exit", "Attempts", "Job"}
	if loops {
		headers = slices.Insert(headers, 2, "Item")
	}
	w.Table(0, "Step Tasks", headers, rows)
}

// workspaces tables the workflow's workspaces: what each asks, its claim
// once made (read for its phase) and, for a ReadWriteOnce one, the node
// the run's pods that mount it are kept on.
func (d *describer) workspaces(w *printing.DescribeWriter, wf *schedv1.Workflow) {
	if len(wf.Spec.Workspaces) == 0 {
		return
	}
	made := map[string]schedv1.WorkspaceStatus{}
	for _, s := range wf.Status.Workspaces {
		made[s.Name] = s
	}
	rows := [][]string{}
	for _, ws := range wf.Spec.Workspaces {
		st := made[ws.Name]
		phase := "-"
		if st.ClaimName != "" {
			switch c, err := d.clients.Kube.CoreV1().PersistentVolumeClaims(wf.Namespace).Get(d.ctx, st.ClaimName, metav1.GetOptions{}); {
			case apierrors.IsNotFound(err):
				phase = "Deleted"
			case err != nil:
				phase = "unknown (" + printing.OneLine(err.Error()) + ")"
			default:
				phase = string(c.Status.Phase)
			}
		}
		keep := "with the run"
		if ws.Keep {
			keep = "kept"
		}
		rows = append(rows, []string{ws.Name, ws.Size.String(), string(ws.Mode()), printing.OrNone(ws.StorageClass),
			printing.OrDash(st.ClaimName), phase, printing.OrDash(st.Node), keep})
	}
	w.Table(0, "Workspaces", []string{"Name", "Size", "Access", "Storage Class", "Claim", "Phase", "Node", "Deleted"}, rows)
}

// approvalRows are the workflow's approval steps, in order, each with who
// may decide and the decision recorded, if any.
func approvalRows(wf *schedv1.Workflow) [][]string {
	decided := map[string]schedv1.StepDecision{}
	for _, a := range wf.Spec.Approvals {
		decided[a.Step] = a
	}
	var rows [][]string
	for _, s := range wf.Spec.Steps {
		if s.Approval == nil {
			continue
		}
		who := "anyone who may update it"
		if s.Approval.Approvers != nil {
			who = s.Approval.Approvers.Describe()
		}
		d, ok := decided[s.Name]
		if !ok {
			rows = append(rows, []string{s.Name, who, "-", "-", "-"})
			continue
		}
		rows = append(rows, []string{s.Name, who, string(d.Decision), d.User, printing.OrDash(printing.OneLine(d.Reason))})
	}
	return rows
}

// itemTables writes, for each forEach step that started, its items that
// have not succeeded: running, or why they did not (nothing when all did).
func itemTables(w *printing.DescribeWriter, wf *schedv1.Workflow) {
	tables := func(spec []schedv1.WorkflowStep, status []schedv1.StepStatus, what string, task func(i, k int) string) {
		statusOf := map[string]schedv1.StepStatus{}
		for _, s := range status {
			statusOf[s.Name] = s
		}
		for i, step := range spec {
			fe := statusOf[step.Name].ForEach
			if step.ForEach == nil || fe == nil {
				continue
			}
			rows := [][]string{}
			for _, it := range fe.Items {
				if it.Phase == schedv1.StepSucceeded {
					continue
				}
				rows = append(rows, []string{strconv.Itoa(int(it.Index)), liveview.PhaseText(it.Phase, ""), task(i, int(it.Index)),
					printing.OrDash(elapsed(it.StartTime, it.CompletionTime)), printing.OrDash(printing.OneLine(it.Message))})
			}
			if len(rows) == 0 {
				continue // every item succeeded: the step's row says so
			}
			title := fmt.Sprintf("Items of %s %s (%d/%d succeeded)", what, step.Name, fe.Succeeded, fe.Total)
			w.Table(0, title, []string{"Item", "Phase", "Task", "Duration", "Message"}, rows)
		}
	}
	tables(wf.Spec.Steps, wf.Status.Steps, "step", func(i, k int) string { return names.ItemTask(wf.Name, i, wf.Spec.Steps[i].Name, k) })
	tables(wf.Spec.Finally, wf.Status.Finally, "finally step", func(j, k int) string { return names.FinallyItemTask(wf.Name, j, wf.Spec.Finally[j].Name, k) })
}

// stepRows is the table of one list of steps: each with its phase
// (WaitingForApproval read as "Waiting for approval"), task, duration,
// outputs and message (why it failed or was skipped, how to approve it),
// and what it waits for when steps run side by side.
func stepRows(spec []schedv1.WorkflowStep, status []schedv1.StepStatus) ([]string, [][]string) {
	statusOf := map[string]schedv1.StepStatus{}
	for _, s := range status {
		statusOf[s.Name] = s
	}
	rows := [][]string{}
	dag := slices.ContainsFunc(spec, func(s schedv1.WorkflowStep) bool { return len(s.DependsOn) > 0 })
	for i, s := range spec {
		ss, ok := statusOf[s.Name]
		phase := ss.Phase
		if !ok || phase == "" {
			phase = schedv1.StepWaiting
		}
		task := printing.OrDash(ss.TaskName)
		if c := ss.CachedFrom; c != nil && ss.TaskName == "" {
			// A cache hit runs no task: the one its outputs came from.
			task = c.Task + " (cached)"
		}
		if l := liveview.LoopOf(ss.ForEach); l != nil && s.ForEach != nil {
			// A loop has a task per item: its progress instead.
			task = l.Progress()
		}
		row := []string{strconv.Itoa(i), s.Name, liveview.PhaseText(phase, ss.Reason), task,
			printing.OrDash(elapsed(ss.StartTime, ss.CompletionTime)), printing.OrDash(sortedPairs(ss.Outputs)), printing.OrDash(printing.OneLine(ss.Message))}
		if dag {
			row = slices.Insert(row, 2, printing.OrDash(strings.Join(s.DependsOn, ",")))
		}
		rows = append(rows, row)
	}
	headers := []string{"#", "Name", "Phase", "Task", "Duration", "Outputs", "Message"}
	if dag {
		// Steps that run side by side: say what each waits for.
		headers = slices.Insert(headers, 2, "After")
	}
	return headers, rows
}

func (d *describer) userDeployment(w *printing.DescribeWriter, ud *schedv1.UserDeployment) {
	w.Header(ud, "UserDeployment")
	st := ud.Status
	spec := ud.Spec
	w.Field(0, "Phase", string(st.Phase))
	w.Field(0, "Ready", st.Ready)
	w.Field(0, "State", string(spec.State))
	if len(st.URLs) == 0 {
		w.Field(0, "URLs", "")
	}
	for i, u := range st.URLs {
		if i == 0 {
			w.Field(0, "URLs", u)
		} else {
			w.Line(0, "\t%s", u)
		}
	}
	if n := st.CurrentRevision; n > 0 {
		rev := strconv.FormatInt(n, 10)
		if rb := st.RolledBack; rb != nil && rb.FromRevision == n {
			rev += fmt.Sprintf(", rolled back: the services run revision %d (spec.rollback: OnDegraded); kubectl sched history %s lists them", rb.ToRevision, ud.Name)
		}
		w.Field(0, "Revision", rev)
	}
	w.Field(0, "Network Isolation", string(spec.NetworkIsolation))
	if spec.Placement != nil {
		w.Field(0, "Placement", placement(*spec.Placement))
	}
	appServices(w, ud)
	appConfig(w, ud)
	w.Conditions(st.Conditions)
	d.appObjects(w, ud)
}

// appServices writes the services of an app with their status.
func appServices(w *printing.DescribeWriter, ud *schedv1.UserDeployment) {
	statusOf := map[string]schedv1.ServiceStatus{}
	for _, s := range ud.Status.Services {
		statusOf[s.Name] = s
	}
	rows := [][]string{}
	for _, s := range ud.Spec.Services {
		ss, ok := statusOf[s.Name]
		ready := "-"
		if ok {
			ready = fmt.Sprintf("%d/%d", ss.ReadyReplicas, ss.DesiredReplicas)
		}
		var ports []string
		for _, p := range s.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, proto))
		}
		rows = append(rows, []string{s.Name, s.Image, ready, printing.OrDash(string(s.Exposure)), printing.OrDash(strings.Join(ports, ",")), printing.OrDash(printing.OneLine(ss.Message))})
	}
	w.Table(0, "Services", []string{"Name", "Image", "Ready", "Exposure", "Ports", "Message"}, rows)
}

// appConfig writes what an app's services are given: config, secrets and
// the ingress.
func appConfig(w *printing.DescribeWriter, ud *schedv1.UserDeployment) {
	spec := ud.Spec
	// Config keys only: values are in the ConfigMap, and a value set by
	// mistake where a secret belonged should not be printed here.
	if len(spec.Config) > 0 {
		keys := make([]string, 0, len(spec.Config))
		for k := range spec.Config {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.Field(0, "Config", fmt.Sprintf("%s (ConfigMap %s)", strings.Join(keys, ", "), names.ConfigMap(ud.Name)))
	} else {
		w.Field(0, "Config", "")
	}
	rows := [][]string{}
	for _, s := range spec.Secrets {
		services := strings.Join(s.Services, ",")
		if services == "" {
			services = "all"
		}
		rows = append(rows, []string{s.Name, secretSource(ud.Name, s), secretInto(s), services})
	}
	w.Table(0, "Secrets", []string{"Name", "Source", "Into", "Services"}, rows)
	if ing := spec.Ingress; ing != nil {
		w.Line(0, "Ingress:")
		w.Field(1, "Host", ing.Host)
		w.Field(1, "Path", ing.Path)
		w.Optional(1, "Class", ing.ClassName)
		if ing.TLS != nil {
			w.Field(1, "TLS Secret", ing.TLS.SecretName)
		}
	}
}

// appObjects writes the Deployments, volumes, Services and Ingresses the
// operator made for an app, as the cluster has them.
func (d *describer) appObjects(w *printing.DescribeWriter, ud *schedv1.UserDeployment) {
	sel := owned(schedv1.LabelUserDeployment, ud.Name)
	opts := metav1.ListOptions{LabelSelector: sel}
	if deps, err := d.clients.Kube.AppsV1().Deployments(ud.Namespace).List(d.ctx, opts); err != nil {
		w.Line(0, "Deployments:\t%s", listError(err, "deployments.apps"))
	} else {
		rows := [][]string{}
		for _, dep := range deps.Items {
			rows = append(rows, []string{dep.Name, fmt.Sprintf("%d/%d", dep.Status.ReadyReplicas, desired(dep)), strconv.Itoa(int(dep.Status.UpdatedReplicas)), strconv.Itoa(int(dep.Status.AvailableReplicas))})
		}
		w.Table(0, "Deployments", []string{"Name", "Ready", "Up-to-date", "Available"}, rows)
	}
	if hasVolumes(ud.Spec) {
		d.describeVolumes(w, ud.Namespace, opts)
	}
	if svcs, err := d.clients.Kube.CoreV1().Services(ud.Namespace).List(d.ctx, opts); err != nil {
		w.Line(0, "Kubernetes Services:\t%s", listError(err, "services"))
	} else {
		rows := [][]string{}
		for _, s := range svcs.Items {
			var ports []string
			for _, p := range s.Spec.Ports {
				ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
			}
			rows = append(rows, []string{s.Name, string(s.Spec.Type), printing.OrNone(s.Spec.ClusterIP), printing.OrNone(strings.Join(ports, ","))})
		}
		w.Table(0, "Kubernetes Services", []string{"Name", "Type", "Cluster-IP", "Ports"}, rows)
	}
	if ings, err := d.clients.Kube.NetworkingV1().Ingresses(ud.Namespace).List(d.ctx, opts); err != nil {
		w.Line(0, "Ingresses:\t%s", listError(err, "ingresses.networking.k8s.io"))
	} else {
		rows := [][]string{}
		for _, ing := range ings.Items {
			var hosts []string
			for _, r := range ing.Spec.Rules {
				hosts = append(hosts, r.Host)
			}
			class := ""
			if ing.Spec.IngressClassName != nil {
				class = *ing.Spec.IngressClassName
			}
			var addrs []string
			for _, lb := range ing.Status.LoadBalancer.Ingress {
				addrs = append(addrs, lb.IP+lb.Hostname)
			}
			rows = append(rows, []string{ing.Name, printing.OrNone(class), printing.OrNone(strings.Join(hosts, ",")), printing.OrNone(strings.Join(addrs, ","))})
		}
		w.Table(0, "Ingresses", []string{"Name", "Class", "Hosts", "Address"}, rows)
	}
}

func hasVolumes(spec schedv1.UserDeploymentSpec) bool {
	return slices.ContainsFunc(spec.Services, func(s schedv1.ServiceSpec) bool { return len(s.Volumes) > 0 })
}

// describeVolumes shows the StatefulSets of services with volumes and their
// claims, which outlive stops and the app itself.
func (d *describer) describeVolumes(w *printing.DescribeWriter, ns string, opts metav1.ListOptions) {
	if sets, err := d.clients.Kube.AppsV1().StatefulSets(ns).List(d.ctx, opts); err != nil {
		w.Line(0, "StatefulSets:\t%s", listError(err, "statefulsets.apps"))
	} else {
		rows := [][]string{}
		for _, s := range sets.Items {
			want := int32(1)
			if s.Spec.Replicas != nil {
				want = *s.Spec.Replicas
			}
			rows = append(rows, []string{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, want), strconv.Itoa(int(s.Status.UpdatedReplicas)), strconv.Itoa(int(s.Status.AvailableReplicas))})
		}
		w.Table(0, "StatefulSets", []string{"Name", "Ready", "Up-to-date", "Available"}, rows)
	}
	if claims, err := d.clients.Kube.CoreV1().PersistentVolumeClaims(ns).List(d.ctx, opts); err != nil {
		w.Line(0, "Volume Claims:\t%s", listError(err, "persistentvolumeclaims"))
	} else {
		rows := [][]string{}
		for _, c := range claims.Items {
			size := c.Spec.Resources.Requests[corev1.ResourceStorage]
			if got, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
				size = got
			}
			rows = append(rows, []string{c.Name, string(c.Status.Phase), size.String(), printing.OrNone(ptr.Deref(c.Spec.StorageClassName, "")), printing.OrNone(c.Spec.VolumeName)})
		}
		w.Table(0, "Volume Claims", []string{"Name", "Status", "Capacity", "Storage Class", "Volume"}, rows)
	}
}

func desired(dep appsv1.Deployment) int32 {
	if dep.Spec.Replicas == nil {
		return 1
	}
	return *dep.Spec.Replicas
}

// secretSource names where a secret's values live; never the values.
func secretSource(app string, s schedv1.SecretReference) string {
	if s.External != nil {
		src := "external " + s.External.Key
		if s.External.Property != "" {
			src += "#" + s.External.Property
		}
		return src + " (Secret " + names.ExternalSecret(app, s.Name) + ")"
	}
	return "Secret " + s.SecretName
}

func secretInto(s schedv1.SecretReference) string {
	switch {
	case s.MountPath != "":
		return "files in " + s.MountPath
	case s.EnvPrefix != "":
		return "env " + s.EnvPrefix + "*"
	}
	return "env"
}

func (d *describer) schedExt(w *printing.DescribeWriter, scx *schedv1.SchedExt) {
	w.Header(scx, "SchedExt")
	spec, st := scx.Spec, scx.Status
	if spec.Scheduler.Name != "" {
		w.Field(0, "Scheduler", spec.Scheduler.Name)
	} else {
		w.Field(0, "Scheduler Image", spec.Scheduler.Image)
		w.Optional(0, "Ops Name", spec.Scheduler.OpsName)
	}
	w.Field(0, "Resolved Image", st.ResolvedImage)
	if len(spec.Args) > 0 {
		w.Field(0, "Args", quoteArgs(spec.Args))
	}
	if len(spec.NodeSelector) == 0 {
		w.Field(0, "Node Selector", "<all nodes>")
	} else {
		w.Field(0, "Node Selector", sortedPairs(spec.NodeSelector))
	}
	if len(spec.Tolerations) > 0 {
		var tols []string
		for _, t := range spec.Tolerations {
			tol := t.Key
			if t.Operator == corev1.TolerationOpEqual || t.Value != "" {
				tol += "=" + t.Value
			}
			if t.Effect != "" {
				tol += ":" + string(t.Effect)
			}
			if tol == "" {
				tol = "<everything>"
			}
			tols = append(tols, tol)
		}
		w.Field(0, "Tolerations", strings.Join(tols, ", "))
	}
	ds := st.DaemonSetName
	if ds != "" {
		ds = d.schedulerNamespace + "/" + ds
	}
	w.Field(0, "DaemonSet", ds)
	w.Field(0, "Nodes", fmt.Sprintf("%d desired, %d ready (attached), %d available, %d unavailable",
		st.DesiredNodes, st.ReadyNodes, st.AvailableNodes, st.UnavailableNodes))
	w.Field(0, "Conflicting Nodes", strings.Join(st.ConflictingNodes, ", "))
	w.Field(0, "Unsupported Nodes", strings.Join(st.UnsupportedNodes, ", "))
	w.Conditions(st.Conditions)
	d.pods(w, "Scheduler Pods", d.schedulerNamespace, owned(schedv1.LabelSchedExt, scx.Name))
}

// events lists core/v1 events about obj (events.k8s.io events included:
// they are the same objects), as kubectl describe does.
func (d *describer) events(w *printing.DescribeWriter, obj client.Object) {
	sel := fields.Set{
		"involvedObject.name": obj.GetName(),
		"involvedObject.kind": d.kind.Kind,
		"involvedObject.uid":  string(obj.GetUID()),
	}
	if obj.GetNamespace() != "" {
		sel["involvedObject.namespace"] = obj.GetNamespace()
	}
	// A cluster-scoped object's events live in the default namespace; look
	// everywhere, as kubectl does.
	events, err := d.clients.Kube.CoreV1().Events(obj.GetNamespace()).List(d.ctx, metav1.ListOptions{FieldSelector: sel.AsSelector().String()})
	if err != nil {
		w.Line(0, "Events:\t%s", listError(err, "events"))
		return
	}
	w.Events(events.Items)
}

// Expires says when the operator deletes a finished task or workflow
// (status.expiry), "" when nothing will: before it finishes, how long
// after; once finished, when, how soon and what set it.
func Expires(e *schedv1.Expiry, now time.Time) string {
	if e == nil {
		return ""
	}
	ttl := tiers.FormatDuration(e.TTLAfterFinished.Duration)
	if e.DeleteTime == nil {
		return fmt.Sprintf("%s after it finishes (%s)", ttl, tiers.Why(e))
	}
	when := "due now"
	if d := e.DeleteTime.Sub(now); d > 0 {
		when = "in " + duration.HumanDuration(d)
	}
	return fmt.Sprintf("%s (%s: %s after it finished, by %s)", printing.Timestamp(*e.DeleteTime), when, ttl, tiers.Why(e))
}

// shortFileOutput is the longest file output shown as it is; a longer one
// (up to 1 MiB) is shown by its size.
const shortFileOutput = 64

// FileOutputs are a task's file outputs as describe shows them: a short
// one-line value as it is, any other by its size.
func FileOutputs(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if len(v) <= shortFileOutput && !strings.ContainsAny(v, "\n\r") && utf8.ValidString(v) {
			out[printing.Line(k)] = printing.Line(v)
			continue
		}
		out[printing.Line(k)] = fmt.Sprintf("(%d bytes)", len(v))
	}
	return out
}
