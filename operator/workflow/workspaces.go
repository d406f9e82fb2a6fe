package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
)

// A step that mounts a workspace waits for the workspace's claim, made in
// the same reconcile just before the step's task; and a step that mounts a
// ReadWriteOnce workspace while another step of the run that mounts it has
// no node yet waits until that one is placed (workspaceRecheck), so every
// pod that mounts it runs on one node.
const workspaceRecheck = time.Second

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;create
// +kubebuilder:rbac:groups="",resources=pods,verbs=get

// workspace is spec.workspaces' entry name, or nil.
func workspace(wf *schedv1.Workflow, name string) *schedv1.Workspace {
	for i := range wf.Spec.Workspaces {
		if wf.Spec.Workspaces[i].Name == name {
			return &wf.Spec.Workspaces[i]
		}
	}
	return nil
}

// workspaceStatus is st's entry for workspace name, or nil.
func workspaceStatus(st *schedv1.WorkflowStatus, name string) *schedv1.WorkspaceStatus {
	for i := range st.Workspaces {
		if st.Workspaces[i].Name == name {
			return &st.Workspaces[i]
		}
	}
	return nil
}

// setWorkspace records workspace ws's claim, or its node, in st, keeping
// the entries in spec order.
func setWorkspace(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, ws schedv1.WorkspaceStatus) {
	if s := workspaceStatus(st, ws.Name); s != nil {
		if ws.ClaimName != "" {
			s.ClaimName = ws.ClaimName
		}
		if ws.Node != "" {
			s.Node = ws.Node
		}
		return
	}
	st.Workspaces = append(st.Workspaces, ws)
	order := func(name string) int {
		return slices.IndexFunc(wf.Spec.Workspaces, func(w schedv1.Workspace) bool { return w.Name == name })
	}
	slices.SortFunc(st.Workspaces, func(a, b schedv1.WorkspaceStatus) int { return order(a.Name) - order(b.Name) })
}

// bindWorkspaces points the mounts of a step's task that name one of the
// workflow's workspaces at the run's claim, and, for a ReadWriteOnce one
// whose node st records, at that node.
func bindWorkspaces(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, t *schedv1.AgentTask) {
	for i := range t.Spec.Workspaces {
		m := &t.Spec.Workspaces[i]
		ws := workspace(wf, m.Name)
		claim := names.WorkspaceClaim(wf.Name, m.Name)
		if ws == nil || (m.ClaimName != "" && m.ClaimName != claim) {
			continue
		}
		m.ClaimName = claim
		if ws.Mode() == schedv1.ReadWriteOnce && m.Node == "" {
			m.Node = workspaceNode(st, ws.Name)
		}
	}
}

// workspacesOf are the workflow's workspaces task mounts.
func workspacesOf(wf *schedv1.Workflow, t *schedv1.AgentTask) []*schedv1.Workspace {
	var out []*schedv1.Workspace
	for _, m := range t.Spec.Workspaces {
		if ws := workspace(wf, m.Name); ws != nil && m.ClaimName == names.WorkspaceClaim(wf.Name, ws.Name) {
			out = append(out, ws)
		}
	}
	return out
}

// claimFor is the PersistentVolumeClaim of workspace ws of wf's run: in
// the workflow's namespace, so its quota counts it, owned by the workflow
// (the garbage collector deletes it with the run) unless ws keeps it.
func (r *Reconciler) claimFor(wf *schedv1.Workflow, ws *schedv1.Workspace) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      names.WorkspaceClaim(wf.Name, ws.Name),
			Namespace: wf.Namespace,
			Labels: map[string]string{
				schedv1.LabelManagedBy: schedv1.ManagedByValue,
				schedv1.LabelWorkflow:  names.Join(wf.Name),
			},
			Annotations: map[string]string{schedv1.AnnotationWorkflowUID: string(wf.UID)},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.PersistentVolumeAccessMode(ws.Mode())},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: ws.Size}},
		},
	}
	if ws.StorageClass != "" {
		pvc.Spec.StorageClassName = ptr.To(ws.StorageClass)
	}
	if !ws.Keep {
		if err := controllerutil.SetControllerReference(wf, pvc, r.Scheme()); err != nil {
			return nil, err
		}
	}
	return pvc, nil
}

// ourClaim says whether pvc, which holds a workspace claim's name, was
// made for this run.
func ourClaim(wf *schedv1.Workflow, pvc *corev1.PersistentVolumeClaim) bool {
	return metav1.IsControlledBy(pvc, wf) || (pvc.Annotations[schedv1.AnnotationWorkflowUID] == string(wf.UID) && metav1.GetControllerOf(pvc) == nil)
}

// ensureClaim makes workspace ws's claim unless the status already has it
// (a restart finds it by name: AlreadyExists, then its owner or UID
// annotation says it is ours). A claim of that name that is not the run's
// is a refusal: the step never mounts someone else's claim by accident.
func (r *Reconciler) ensureClaim(ctx context.Context, wf *schedv1.Workflow, st *schedv1.WorkflowStatus, ws *schedv1.Workspace) error {
	if s := workspaceStatus(st, ws.Name); s != nil && s.ClaimName != "" {
		return nil
	}
	pvc, err := r.claimFor(wf, ws)
	if err != nil {
		return err
	}
	switch err := r.Create(ctx, pvc); {
	case apierrors.IsAlreadyExists(err):
		got := &corev1.PersistentVolumeClaim{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pvc), got); err != nil {
			return fmt.Errorf("read claim %s after it already existed: %w", pvc.Name, err)
		}
		if !ourClaim(wf, got) {
			return &claimTakenError{claim: pvc.Name, workspace: ws.Name}
		}
	case err != nil:
		return err
	default:
		log.FromContext(ctx).Info("Created workspace claim", "claim", pvc.Name, "workspace", ws.Name)
		r.Recorder.Eventf(wf, nil, corev1.EventTypeNormal, schedv1.ReasonCreated, "CreateClaim", "created claim %s for workspace %s (%s)", pvc.Name, ws.Name, ws.Size.String())
	}
	setWorkspace(wf, st, schedv1.WorkspaceStatus{Name: ws.Name, ClaimName: pvc.Name})
	return nil
}

// claimTakenError: a claim the run did not make holds a workspace's name.
type claimTakenError struct{ claim, workspace string }

func (e *claimTakenError) Error() string {
	return fmt.Sprintf("workspace %s: the claim %s exists and is not this run's; delete it or rename the workflow", e.workspace, e.claim)
}

// prepareWorkspaces runs before the step tasks of p.creates are created:
// it makes the claims of the workspaces they mount and takes back the
// creates that cannot start yet. A ReadWriteOnce workspace another step
// of the run mounts with no node known yet holds the create (the step
// stays Waiting); a claim the quota refuses holds it as a full quota holds
// a task; a claim the API server refuses for good, or a name someone
// else's claim holds, fails the step. It returns the quota's error, and
// whether a held create should bring the workflow back soon.
func (r *Reconciler) prepareWorkspaces(ctx context.Context, wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask, items itemTasks, p *plan, now metav1.Time) (quotaErr error, recheck bool, err error) {
	if len(wf.Spec.Workspaces) == 0 || len(p.creates) == 0 {
		return nil, false, nil
	}
	// Which workspaces a started, unfinished task mounts with no node.
	unplaced := map[string]bool{}
	mark := func(t *schedv1.AgentTask) {
		if t == nil || t.Status.Phase.Finished() {
			return
		}
		for _, m := range t.Spec.Workspaces {
			if ws := workspace(wf, m.Name); ws != nil && ws.Mode() == schedv1.ReadWriteOnce && m.Node == "" {
				unplaced[ws.Name] = true
			}
		}
	}
	for _, t := range tasks {
		mark(t)
	}
	for _, byItem := range items {
		for _, t := range byItem {
			mark(t)
		}
	}
	kept := p.creates[:0]
	for _, c := range p.creates {
		held, failed, reason, quota := "", "", schedv1.ReasonRejected, false
		for _, ws := range workspacesOf(wf, c.task) {
			if ws.Mode() == schedv1.ReadWriteOnce && workspaceNode(&p.status, ws.Name) == "" && unplaced[ws.Name] {
				held = fmt.Sprintf("waiting for the node of workspace %s (ReadWriteOnce): another step mounts it and is not placed yet", ws.Name)
				break
			}
			err := r.ensureClaim(ctx, wf, &p.status, ws)
			var taken *claimTakenError
			switch class := refusal.Classify(err); {
			case err == nil:
			case asClaimTaken(err, &taken):
				failed, reason = taken.Error(), schedv1.ReasonNameTaken
			case class == refusal.Quota:
				quotaErr, quota = err, true
				held = fmt.Sprintf("the claim of workspace %s: %s", ws.Name, refusal.Message(err))
			case class == refusal.Final:
				failed = fmt.Sprintf("the API server refused the claim of workspace %s: %s", ws.Name, refusal.Message(err))
			default:
				return nil, false, fmt.Errorf("create claim of workspace %s: %w", ws.Name, err)
			}
			if held != "" || failed != "" {
				break
			}
		}
		switch {
		case failed != "" && c.loop:
			itemFailed(wf, &p.status, c, failed, now)
		case failed != "":
			cannotStart(wf, &p.status, c.step, reason, failed, now)
		case quota && c.loop:
			itemWaitingForQuota(wf, &p.status, c, held)
		case quota:
			waitingForQuota(wf, &p.status, c.step, held)
		case held != "" && c.loop:
			itemWaitingForWorkspace(wf, &p.status, c, held)
			recheck = true
		case held != "":
			waitingForWorkspace(wf, &p.status, c.step, held)
			recheck = true
		default:
			for _, ws := range workspacesOf(wf, c.task) {
				if ws.Mode() == schedv1.ReadWriteOnce && workspaceNode(&p.status, ws.Name) == "" {
					// The next step that mounts it waits for this one's node.
					unplaced[ws.Name] = true
				}
			}
			kept = append(kept, c)
		}
	}
	p.creates = kept
	return quotaErr, recheck, nil
}

func asClaimTaken(err error, taken **claimTakenError) bool { return errors.As(err, taken) }

// workspaceNode is the node st records for workspace name.
func workspaceNode(st *schedv1.WorkflowStatus, name string) string {
	if s := workspaceStatus(st, name); s != nil {
		return s.Node
	}
	return ""
}

// waitingForWorkspace puts step i back to Waiting, since its task was not
// created, and says what it waits for.
func waitingForWorkspace(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, msg string) {
	s := stepStatus(wf, st, i)
	s.Phase, s.TaskName, s.StartTime = schedv1.StepWaiting, "", nil
	s.Message = msg
}

// itemWaitingForWorkspace forgets item c, whose task was not created: it
// starts once the workspace's node is known.
func itemWaitingForWorkspace(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, c stepCreate, msg string) {
	s := stepStatus(wf, st, c.step)
	forgetItem(s, c.item)
	s.Message = loopProgress(s.ForEach) + "; " + msg
}

// placeWorkspaces records in st the node of each ReadWriteOnce workspace,
// from the pod of the first task of the run that mounts it and was placed,
// and pins the creates of p that mount it there: the tasks created after it
// run on that node (bindWorkspaces), and a restart keeps it. The pod is
// read past the cache, which holds no pods for this controller, once per
// workspace and run.
func (r *Reconciler) placeWorkspaces(ctx context.Context, wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask, items itemTasks, p *plan) error {
	st := &p.status
	var all []*schedv1.AgentTask
	for _, t := range tasks {
		all = append(all, t)
	}
	for _, byItem := range items {
		for _, t := range byItem {
			all = append(all, t)
		}
	}
	// Oldest first: the first placed pod decides.
	slices.SortFunc(all, func(a, b *schedv1.AgentTask) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	for i := range wf.Spec.Workspaces {
		ws := &wf.Spec.Workspaces[i]
		if ws.Mode() != schedv1.ReadWriteOnce || workspaceNode(st, ws.Name) != "" || workspaceStatus(st, ws.Name) == nil {
			continue
		}
		for _, t := range all {
			if t.Status.PodName == "" || !slices.Contains(workspacesOf(wf, t), ws) {
				continue
			}
			pod := &corev1.Pod{}
			err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: wf.Namespace, Name: t.Status.PodName}, pod)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read pod %s for the node of workspace %s: %w", t.Status.PodName, ws.Name, err)
			}
			if pod.Spec.NodeName != "" {
				setWorkspace(wf, st, schedv1.WorkspaceStatus{Name: ws.Name, Node: pod.Spec.NodeName})
				break
			}
		}
	}
	for _, c := range p.creates {
		bindWorkspaces(wf, st, c.task)
	}
	return nil
}

// rerunWriters marks to run again, in a retry, every step that writes a
// workspace a step that runs again mounts, and the steps that depend on
// it: a retry is a new run with new, empty claims, so a reused step's
// files are not there. It goes on until nothing changes (at most one pass
// per step).
func rerunWriters(wf *schedv1.Workflow, rerun []bool) {
	if len(wf.Spec.Workspaces) == 0 {
		return
	}
	mounts := func(i int, write bool) []string {
		var out []string
		for _, m := range wf.Spec.Steps[i].Task.Workspaces {
			if m.ClaimName == "" && workspace(wf, m.Name) != nil && (!write || !m.ReadOnly) {
				out = append(out, m.Name)
			}
		}
		return out
	}
	for changed := true; changed; {
		changed = false
		needed := map[string]bool{}
		for i := range wf.Spec.Steps {
			if rerun[i] {
				for _, n := range mounts(i, false) {
					needed[n] = true
				}
			}
		}
		for i := range wf.Spec.Steps {
			if rerun[i] {
				continue
			}
			deps := slices.ContainsFunc(wf.Spec.Dependencies(i), func(d int) bool { return rerun[d] })
			writes := slices.ContainsFunc(mounts(i, true), func(n string) bool { return needed[n] })
			if deps || writes {
				rerun[i], changed = true, true
			}
		}
	}
}
