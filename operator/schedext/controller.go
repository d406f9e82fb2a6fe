// Package schedext reconciles SchedExts: one DaemonSet per SchedExt in the
// operator's scheduler namespace loads a sched_ext scheduler on the nodes
// arbitration gives it (one scheduler per node, the oldest SchedExt wins),
// and the status says where the kernel really has it attached.
//
// The DaemonSet is owned by its cluster-scoped SchedExt through an owner
// reference (a namespaced dependent may have a cluster-scoped owner), so the
// garbage collector removes it, and its pods, when the SchedExt is deleted;
// no finalizer is needed. The scheduler namespace itself stays: it is shared
// by every SchedExt.
//
// Each pod has three containers:
//   - preflight (init, Settings.HelperImage): exits ExitUnsupported with a
//     termination message when the kernel lacks sched_ext or BTF; the node is
//     then listed in status.unsupportedNodes.
//   - scheduler (the scheduler image, privileged): the loader.
//   - attach-check (Settings.HelperImage): idles; its readiness probe passes
//     only while /sys/kernel/sched_ext/state is "enabled" and root/ops starts
//     with the expected ops name. So a Ready pod means an attached scheduler,
//     and the DaemonSet's ready count is the attach count.
//
// The checks run in a helper image, not the scheduler image, so scheduler
// images need no shell (the scx images are not built to provide one).
//
// Arbitration (arbitration.go) is a pure function of all SchedExts and all
// nodes. A younger SchedExt's DaemonSet excludes the nodes an older one
// keeps through required node affinity on metadata.name. Two consequences:
//   - A change in the excluded set changes the pod template, so the younger
//     DaemonSet replaces its pods one node at a time (maxSurge 0).
//   - On a handover (the older deleted or narrowed, a node relabelled) the
//     new loader can start while the old one is still exiting; the kernel
//     refuses a second attach, so the new pod restarts until the old loader
//     is gone, and is not Ready meanwhile.
package schedext

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	phases "github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// Pod Security Admission label that lets the privileged loaders run in the
// scheduler namespace.
const labelPSAEnforce = "pod-security.kubernetes.io/enforce"

// Reconciler reconciles SchedExts.
type Reconciler struct {
	client.Client
	// APIReader reads the scheduler namespace without caching every
	// namespace in the cluster.
	APIReader   client.Reader
	Recorder    recorder.EventRecorder
	Namespace   string
	Images      map[string]string
	HelperImage string
	// AllowedRegistries limits the images a SchedExt may name itself
	// (spec.scheduler.image); any when empty.
	AllowedRegistries []string
	Clock             clock.PassiveClock

	// writer writes the SchedExts' status (SetupWithManager gives it the
	// client).
	writer status.Writer
}

// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=schedexts,verbs=get;list;watch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=schedexts/status,verbs=get;update;patch
// The DaemonSet's owner reference blocks the SchedExt's deletion until the
// DaemonSet is gone; setting that needs update on the finalizers subresource
// where OwnerReferencesPermissionEnforcement is enabled.
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=schedexts/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;update;delete,namespace=kubectl-sched-schedulers
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// Arbitration reads every node's labels and taints (NodeLabeler patches one
// label of theirs).
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// DaemonSets only in the scheduler namespace: a Role there, which
// `kubectl sched install` creates with the namespace. The operator creates
// no namespace (it reads them with the tenant controller's rights).

// Reconcile makes one SchedExt's DaemonSet match its spec and its share of
// the nodes, then reports what the kernels say.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	scx := &schedv1.SchedExt{}
	if err := r.Get(ctx, req.NamespacedName, scx); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.deleteOrphan(ctx, req.Name)
		}
		return ctrl.Result{}, err
	}
	if !scx.DeletionTimestamp.IsZero() {
		r.writer.Forget(scx)
		return ctrl.Result{}, nil
	}
	s := &scope{scx: scx, before: *scx.Status.DeepCopy()}
	return phases.Run(ctx, s, r.observePhase, r.syncDaemonSet, r.writeStatus)
}

// scope is what one reconcile of a SchedExt read and did, passed through
// its phases in order.
type scope struct {
	scx *schedv1.SchedExt
	// before is the status the SchedExt was read with.
	before schedv1.SchedExtStatus
	o      observed
}

// observePhase reads the SchedExt's world (observe).
func (r *Reconciler) observePhase(ctx context.Context, s *scope) (phases.Result, error) {
	var err error
	s.o, err = r.observe(ctx, s.scx)
	return phases.Result{}, err
}

// syncDaemonSet makes the DaemonSet match the spec and the SchedExt's share
// of the nodes, or deletes it while the scheduler may not run.
func (r *Reconciler) syncDaemonSet(ctx context.Context, s *scope) (phases.Result, error) {
	o := &s.o
	if o.image == "" || o.refused != "" || o.noNamespace != "" {
		if err := r.deleteDaemonSet(ctx, s.scx, *o); err != nil {
			return phases.Result{}, err
		}
		o.ds = nil
		return phases.Result{}, nil
	}
	desired := buildDaemonSet(s.scx, buildInput{
		Namespace:   r.Namespace,
		Image:       o.image,
		HelperImage: r.HelperImage,
		Exclude:     o.assignment.ExcludedNodes(),
	})
	var err error
	o.ds, err = r.applyDaemonSet(ctx, s.scx, o.ds, desired)
	return phases.Result{}, err
}

// writeStatus computes the status and writes it when it changed, telling
// of attach, detach and conflicts with events (statusEvents).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (phases.Result, error) {
	scx := s.scx
	scx.Status = computeStatus(scx, s.o, metav1.NewTime(r.Clock.Now()))
	out, err := r.writer.Write(ctx, scx, s.before, status.Now)
	if err != nil || !out.Wrote {
		return phases.Requeue(out.Wait), err // a Conflict too: see status.Patch
	}
	lg := log.FromContext(ctx)
	for _, n := range statusEvents(&s.before, &scx.Status) {
		r.Recorder.Eventf(scx, nil, n.typ, n.reason, n.action, "%s", n.message)
		lg.Info(n.log, n.values...)
	}
	return phases.Result{}, nil
}

// observe reads the SchedExt's world from the cache: arbitration over all
// SchedExts and nodes, its DaemonSet and its pods.
func (r *Reconciler) observe(ctx context.Context, scx *schedv1.SchedExt) (observed, error) {
	var o observed
	o.image, _ = ResolveImage(scx.Spec.Scheduler, r.Images)
	o.refused = Refused(o.image, scx.Spec.Scheduler.Image != "", r.AllowedRegistries)

	// Read-only views of the cache: arbitration copies nothing it keeps,
	// and copying every node on every reconcile would cost the most.
	var all schedv1.SchedExtList
	if err := r.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
		return o, err
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return o, err
	}
	o.assignment = Arbitrate(all.Items, nodes.Items)[scx.Name]

	ds := &appsv1.DaemonSet{}
	err := r.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: names.DaemonSet(scx.Name)}, ds)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return o, err
	case !metav1.IsControlledBy(ds, scx):
		// Usually the DaemonSet of a deleted SchedExt of the same name that
		// the garbage collector has not removed yet; its deletion brings us back.
		return o, fmt.Errorf("daemonset %s/%s exists but does not belong to SchedExt %s (uid %s); waiting for it to go", ds.Namespace, ds.Name, scx.Name, scx.UID)
	default:
		o.ds = ds
	}

	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels{schedv1.LabelSchedExt: scx.Name}); err != nil {
		return o, err
	}
	o.pods = pods.Items

	if o.ds == nil {
		ns := &corev1.Namespace{}
		err := r.Get(ctx, types.NamespacedName{Name: r.Namespace}, ns)
		switch {
		case apierrors.IsNotFound(err):
			o.noNamespace = fmt.Sprintf("the scheduler namespace %s does not exist; 'kubectl sched install' creates it, privileged, with the operator's rights there", r.Namespace)
		case err != nil:
			return o, err
		case ns.Labels[labelPSAEnforce] != "privileged":
			// Not refused here: the cluster may admit privileged pods
			// anyway. If not, the DaemonSet's pods are refused and the
			// status says that.
			log.FromContext(ctx).Info("The scheduler namespace does not enforce the privileged Pod Security level; the loaders may be refused", "namespace", r.Namespace)
		}
	}
	return o, nil
}

// applyDaemonSet creates the DaemonSet, or updates it when the SchedExt or
// arbitration changed it (the template hash) or someone edited it.
func (r *Reconciler) applyDaemonSet(ctx context.Context, scx *schedv1.SchedExt, current, desired *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	if err := controllerutil.SetControllerReference(scx, desired, r.Scheme()); err != nil {
		return nil, err
	}
	if current == nil {
		err := r.Create(ctx, desired)
		if err == nil {
			log.FromContext(ctx).Info("Created DaemonSet", "daemonSet", client.ObjectKeyFromObject(desired), "image", desired.Spec.Template.Spec.Containers[0].Image)
			r.Recorder.Eventf(scx, desired, corev1.EventTypeNormal, schedv1.ReasonCreated, "CreateDaemonSet", "created DaemonSet %s/%s", desired.Namespace, desired.Name)
			return desired, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			r.Recorder.Eventf(scx, nil, corev1.EventTypeWarning, schedv1.ReasonCreateFailed, "CreateDaemonSet", "cannot create DaemonSet %s/%s: %v", desired.Namespace, desired.Name, err)
			return nil, fmt.Errorf("create daemonset %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		// Our cache has not seen it yet, or it lost the label the cache
		// selects on: read it from the server and repair it.
		current = &appsv1.DaemonSet{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), current); err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(current, scx) {
			return nil, fmt.Errorf("daemonset %s/%s exists but does not belong to SchedExt %s", current.Namespace, current.Name, scx.Name)
		}
	}

	why, edited := driftReason(current, desired)
	if why == "" {
		return current, nil
	}
	updated := current.DeepCopy()
	updated.Labels = mergeLabels(updated.Labels, desired.Labels)
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[AnnotationTemplateHash] = desired.Annotations[AnnotationTemplateHash]
	updated.OwnerReferences = desired.OwnerReferences
	updated.Spec = desired.Spec
	if err := r.Update(ctx, updated); err != nil {
		return nil, fmt.Errorf("update daemonset %s/%s: %w", updated.Namespace, updated.Name, err)
	}
	log.FromContext(ctx).Info("Updated DaemonSet", "daemonSet", client.ObjectKeyFromObject(updated), "why", why)
	reason := schedv1.ReasonReconciling
	if edited {
		reason = schedv1.ReasonRepaired
	}
	r.Recorder.Eventf(scx, updated, corev1.EventTypeNormal, reason, "UpdateDaemonSet", "updated DaemonSet %s/%s: %s", updated.Namespace, updated.Name, why)
	return updated, nil
}

// driftReason says why current must be rewritten to desired, or "", and
// whether someone else edited it.
func driftReason(current, desired *appsv1.DaemonSet) (why string, edited bool) {
	if current.Annotations[AnnotationTemplateHash] != desired.Annotations[AnnotationTemplateHash] {
		return "the SchedExt or its share of the nodes changed", false
	}
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			return "its labels were edited", true
		}
	}
	// Unset fields in desired are not compared, so server defaults are
	// not drift; every number the builder sets is set explicitly.
	if !equality.Semantic.DeepDerivative(desired.Spec.Template, current.Spec.Template) {
		return "its pod template was edited", true
	}
	return "", false
}

func mergeLabels(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	maps.Copy(into, from)
	return into
}

// deleteDaemonSet removes the DaemonSet of a SchedExt whose scheduler no
// longer resolves, or whose image is no longer allowed: it would run a
// scheduler the spec no longer names (or an admin no longer allows), and
// outside arbitration.
func (r *Reconciler) deleteDaemonSet(ctx context.Context, scx *schedv1.SchedExt, o observed) error {
	ds := o.ds
	if ds == nil {
		return nil
	}
	if err := r.Delete(ctx, ds, client.Preconditions{UID: &ds.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	reason, why := schedv1.ReasonUnknownScheduler, fmt.Sprintf("no image for scheduler %q", scx.Spec.Scheduler.Name)
	if o.refused != "" {
		reason, why = schedv1.ReasonImageNotAllowed, o.refused
	}
	log.FromContext(ctx).Info("Deleted DaemonSet", "daemonSet", client.ObjectKeyFromObject(ds), "reason", reason)
	r.Recorder.Eventf(scx, ds, corev1.EventTypeWarning, reason, "DeleteDaemonSet", "deleted DaemonSet %s/%s: %s", ds.Namespace, ds.Name, why)
	return nil
}

// deleteOrphan deletes the DaemonSet of a SchedExt that is gone. The
// garbage collector would too, through the owner reference, but only after
// its discovery has caught up with the SchedExt kind; deleting at once
// shortens the time the old loader runs on nodes another SchedExt is taking
// over.
func (r *Reconciler) deleteOrphan(ctx context.Context, name string) error {
	ds := &appsv1.DaemonSet{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: names.DaemonSet(name)}, ds); err != nil {
		return client.IgnoreNotFound(err)
	}
	ref := metav1.GetControllerOf(ds)
	if ref == nil || ref.Kind != "SchedExt" || ref.Name != name || !ds.DeletionTimestamp.IsZero() {
		return nil
	}
	err := r.Delete(ctx, ds, client.Preconditions{UID: &ds.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete daemonset %s/%s of deleted SchedExt %s: %w", ds.Namespace, ds.Name, name, err)
	}
	log.FromContext(ctx).Info("Deleted the DaemonSet of a deleted SchedExt", "daemonSet", client.ObjectKeyFromObject(ds))
	return nil
}

// note is an event to record, with its log line.
type note struct {
	typ, reason, action, message string
	log                          string
	values                       []any
}

// statusEvents are the events a status going from before to st tells:
// attached everywhere, or no longer; degraded (again for another reason
// or other nodes, not on every message change: a crash loop's restart
// count is in it), or no longer.
func statusEvents(before, st *schedv1.SchedExtStatus) []note {
	var out []note
	wasReady := meta.FindStatusCondition(before.Conditions, schedv1.ConditionReady)
	ready := meta.FindStatusCondition(st.Conditions, schedv1.ConditionReady)
	switch {
	case ready == nil:
	case ready.Status == metav1.ConditionTrue && (wasReady == nil || wasReady.Status != metav1.ConditionTrue):
		out = append(out, note{corev1.EventTypeNormal, schedv1.ReasonAttached, "Attach", ready.Message,
			"SchedExt attached", []any{"desiredNodes", st.DesiredNodes}})
	case ready.Status != metav1.ConditionTrue && wasReady != nil && wasReady.Status == metav1.ConditionTrue:
		out = append(out, note{corev1.EventTypeWarning, ready.Reason, "Attach", ready.Message,
			"SchedExt no longer attached everywhere", []any{"reason", ready.Reason, "readyNodes", st.ReadyNodes, "desiredNodes", st.DesiredNodes}})
	}
	wasDegraded := meta.FindStatusCondition(before.Conditions, schedv1.ConditionDegraded)
	degraded := meta.FindStatusCondition(st.Conditions, schedv1.ConditionDegraded)
	switch {
	case degraded == nil:
	case degraded.Status == metav1.ConditionTrue && (wasDegraded == nil || wasDegraded.Status != metav1.ConditionTrue ||
		wasDegraded.Reason != degraded.Reason || !slices.Equal(before.ConflictingNodes, st.ConflictingNodes) ||
		!slices.Equal(before.UnsupportedNodes, st.UnsupportedNodes)):
		out = append(out, note{corev1.EventTypeWarning, degraded.Reason, "Arbitrate", degraded.Message,
			"SchedExt degraded", []any{"reason", degraded.Reason, "conflictingNodes", len(st.ConflictingNodes), "unsupportedNodes", len(st.UnsupportedNodes)}})
	case degraded.Status != metav1.ConditionTrue && wasDegraded != nil && wasDegraded.Status == metav1.ConditionTrue:
		out = append(out, note{corev1.EventTypeNormal, schedv1.ReasonAsExpected, "Arbitrate", "no longer degraded (was " + wasDegraded.Reason + ")",
			"SchedExt no longer degraded", []any{"was", wasDegraded.Reason}})
	}
	return out
}

// SetupWithManager watches SchedExts, their DaemonSets and pods, and the
// nodes. Arbitration is global, so a node's labels or taints changing, or
// any SchedExt appearing, changing its spec or going, re-runs every
// SchedExt. It never polls.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.writer.Client, r.writer.Clock = r.Client, r.Clock
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	byPodLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[schedv1.LabelSchedExt]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	})
	everySchedExt := handler.EnqueueRequestsFromMapFunc(r.allSchedExts)
	return ctrl.NewControllerManagedBy(mgr).
		For(&schedv1.SchedExt{}).
		Owns(&appsv1.DaemonSet{}).
		Watches(&corev1.Pod{}, byPodLabel, builder.WithPredicates(loaderPods(r.Namespace))).
		Watches(&corev1.Node{}, everySchedExt, builder.WithPredicates(nodeChanged)).
		// Install creating the scheduler namespace unblocks every SchedExt.
		Watches(&corev1.Namespace{}, everySchedExt, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == r.Namespace
		}))).
		Watches(&schedv1.SchedExt{}, everySchedExt, builder.WithPredicates(claimChanged)).
		WithOptions(opts).
		Named("schedext").
		Complete(r)
}

func (r *Reconciler) allSchedExts(ctx context.Context, _ client.Object) []reconcile.Request {
	var list schedv1.SchedExtList
	if err := r.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "Cannot list SchedExts to re-run arbitration")
		return nil
	}
	return watch.Requests(&list, nil)
}

// nodeChanged passes the node events arbitration depends on: a node added
// or removed, or its labels or taints changed. Status heartbeats do not
// pass, nor the CPU scheduler label, which the node labeler writes from
// arbitration's outcome and no SchedExt may select by.
var nodeChanged = watch.Changed(func(old, cur *corev1.Node) bool {
	return !equalBesidesCPUScheduler(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero()
})

// equalBesidesCPUScheduler compares node labels, the CPU scheduler label
// left out.
func equalBesidesCPUScheduler(a, b map[string]string) bool {
	if maps.Equal(a, b) {
		return true
	}
	a, b = maps.Clone(a), maps.Clone(b)
	delete(a, schedv1.NodeLabelCPUScheduler)
	delete(b, schedv1.NodeLabelCPUScheduler)
	return maps.Equal(a, b)
}

// claimChanged passes the SchedExt events that can move nodes between
// SchedExts: created, deleted, spec changed, or deletion started.
var claimChanged = watch.Changed(func(old, cur *schedv1.SchedExt) bool {
	return old.Generation != cur.Generation || old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero()
})
