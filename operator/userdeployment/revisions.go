package userdeployment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
)

// The operator records each revision of an app as a ControllerRevision it
// controls (api/revision): what the spec makes its pods run. The number of
// the spec's revision is the status's currentRevision.
//
// Recording is idempotent: a new revision is made only when the spec's
// template differs from the latest one's (by the hash label), and it is
// named <app>.v<N> for the next number, so a restart, a crash between the
// create and the status write, or a cache that has not seen the create
// yet finds the same revision instead of making a second.
//
// With spec.rollback: OnDegraded, a revision that does not become Running
// within spec.progressDeadline of its creation is rolled back to the last
// that did (status.lastRunningRevision): the decision goes into the
// status first (status.rolledBack), and from then on every reconcile
// builds the app's objects from that revision's template restored into
// the spec (revision.Restore), until the spec's template changes or the
// policy is Never again. The spec itself is never written.

// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;delete

// revisions is what the app's revisions decide for one reconcile.
type revisions struct {
	// history is the app's revisions the operator trusts, by number, from
	// the cache (no data).
	history []*appsv1.ControllerRevision
	// current is the spec's revision; nil when it could not be recorded.
	current *appsv1.ControllerRevision
	// run is the number of the revision whose template the plan builds:
	// the current one's, or the one rolled back to; 0 when not known.
	run int64
	// rolledBack is status.rolledBack as it is to be.
	rolledBack *schedv1.RolledBack
	// restored is the app with the revision rolled back to restored into
	// its spec, which the plan builds from; nil when not rolled back.
	restored *schedv1.UserDeployment
}

// revisionsOf lists the app's revisions, records the spec's when it is
// new, and says which revision runs.
func (r *Reconciler) revisionsOf(ctx context.Context, s *syncState) (revisions, error) {
	ud := s.ud
	var rv revisions
	var list appsv1.ControllerRevisionList
	if err := r.List(ctx, &list, client.InNamespace(ud.Namespace), client.MatchingLabels{schedv1.LabelUserDeployment: ud.Name}); err != nil {
		return rv, fmt.Errorf("list ControllerRevisions: %w", err)
	}
	for i := range list.Items {
		cr := &list.Items[i]
		if why := revision.Check(cr, ud); why != "" {
			log.FromContext(ctx).V(1).Info("Ignored a ControllerRevision", "name", cr.Name, "why", why)
			continue
		}
		rv.history = append(rv.history, cr)
	}
	slices.SortFunc(rv.history, func(a, b *appsv1.ControllerRevision) int { return cmp.Compare(a.Revision, b.Revision) })

	tmpl := revision.Of(ud)
	hash := revision.Hash(tmpl)
	cur, err := r.record(ctx, s, &rv, tmpl, hash)
	if err != nil {
		return rv, err
	}
	rv.current = cur
	if cur != nil {
		rv.run = cur.Revision
	}

	// A rollback holds while the spec makes the revision rolled back from.
	rb := ud.Status.RolledBack
	if rb == nil {
		r.forget(client.ObjectKeyFromObject(ud))
		return rv, nil
	}
	defer func() {
		if rv.restored == nil {
			r.forget(client.ObjectKeyFromObject(ud))
		}
	}()
	from, to := rv.find(rb.FromRevision), rv.find(rb.ToRevision)
	switch {
	case ud.Spec.Rollback != schedv1.RollbackOnDegraded:
		log.FromContext(ctx).Info("Rollback ended: spec.rollback is no longer OnDegraded", "from", rb.FromRevision, "to", rb.ToRevision)
		return rv, nil
	case from == nil || from.Labels[schedv1.LabelRevisionHash] != hash:
		log.FromContext(ctx).Info("Rollback ended: the spec changed", "from", rb.FromRevision, "to", rb.ToRevision)
		return rv, nil
	case to == nil:
		log.FromContext(ctx).Info("Rollback ended: the revision rolled back to is gone", "to", rb.ToRevision)
		return rv, nil
	}
	t, err := r.template(ctx, ud, to)
	switch {
	case errors.Is(err, revision.ErrUntrusted), apierrors.IsNotFound(err):
		// Gone, or not one to trust after all: run the spec's.
		log.FromContext(ctx).Error(err, "Rollback ended: the revision rolled back to cannot be used", "to", rb.ToRevision)
		return rv, nil
	case err != nil:
		return rv, fmt.Errorf("read the revision rolled back to: %w", err)
	}
	restored := ud.DeepCopy()
	restored.Spec, _ = revision.Restore(ud.Spec, t)
	rv.restored, rv.rolledBack, rv.run = restored, rb, to.Revision
	return rv, nil
}

// find is revision n, or nil.
func (rv *revisions) find(n int64) *appsv1.ControllerRevision {
	for _, cr := range rv.history {
		if cr.Revision == n {
			return cr
		}
	}
	return nil
}

// record returns the spec's revision, tmpl with hash: the latest one when
// it records tmpl, else a new one with the next number. It returns nil,
// with the reason in s, when the revision's name is taken by someone
// else's object.
func (r *Reconciler) record(ctx context.Context, s *syncState, rv *revisions, tmpl revision.Template, hash string) (*appsv1.ControllerRevision, error) {
	ud := s.ud
	var next int64 = 1
	var latest *appsv1.ControllerRevision
	if n := len(rv.history); n > 0 {
		latest = rv.history[n-1]
		if latest.Labels[schedv1.LabelRevisionHash] == hash {
			return latest, nil
		}
		next = latest.Revision + 1
	}
	// Numbers only grow, even when someone deleted the latest revisions.
	next = max(next, ud.Status.CurrentRevision+1)
	if next > revision.MaxNumber {
		s.problems = append(s.problems, fmt.Sprintf("no new revision recorded: the app has had %d, the most there can be; recreate it to start again", revision.MaxNumber))
		return nil, nil
	}
	// What changed since the latest says whose change it is.
	var prev *revision.Template
	if latest != nil {
		if t, err := r.readRevision(ctx, ud, latest); err == nil {
			prev = &t
		}
	}
	cr := revision.New(ud, next, tmpl, revision.ChangedBy(ud, prev))
	err := r.Create(ctx, cr, client.FieldOwner(fieldOwner))
	switch {
	case err == nil:
		crashpoint.Hit(crashpoint.RevisionCreated)
		log.FromContext(ctx).Info("Recorded a revision", "revision", next, "name", cr.Name, "changedBy", cr.Annotations[schedv1.AnnotationChangedBy])
		rv.history = append(rv.history, cr)
		return cr, nil
	case refusal.Classify(err) == refusal.Quota:
		// The tier's count/controllerrevisions.apps is full: the app runs
		// on, and says why its change has no revision.
		s.problems = append(s.problems, fmt.Sprintf("no new revision recorded: %s; delete an app or lower spec.revisionHistoryLimit", refusal.Message(err)))
		return nil, nil
	case !apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("create ControllerRevision %s: %w", cr.Name, err)
	}
	// Made before (the cache is behind), or someone else's.
	existing := &appsv1.ControllerRevision{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cr), existing); err != nil {
		return nil, err
	}
	switch {
	case revision.Check(existing, ud) != "":
		s.conflict = true
		s.problems = append(s.problems, (&conflictError{objectKey{"ControllerRevision", cr.Name}}).Error()+" (the app's revision "+fmt.Sprint(next)+" is not recorded)")
		return nil, nil
	case existing.Labels[schedv1.LabelRevisionHash] != hash:
		return nil, fmt.Errorf("revision %s exists with another template: the cache is behind, retrying", cr.Name)
	}
	rv.history = append(rv.history, TrimmedRevision(existing))
	return rv.history[len(rv.history)-1], nil
}

// TrimmedRevision is cr as the cache keeps it.
func TrimmedRevision(cr *appsv1.ControllerRevision) *appsv1.ControllerRevision {
	t, _ := TrimRevision(cr)
	return t.(*appsv1.ControllerRevision)
}

// rememberedTemplate is the template of the revision an app is rolled
// back to, by the ControllerRevision's UID.
type rememberedTemplate struct {
	uid      types.UID
	template revision.Template
}

// template is the template cr records, read from the API server and
// checked (revision.Read), or remembered from an earlier read: a
// ControllerRevision's data never changes, and its UID names it. One is
// remembered per app rolled back (forget drops it).
func (r *Reconciler) template(ctx context.Context, ud *schedv1.UserDeployment, cr *appsv1.ControllerRevision) (revision.Template, error) {
	key := client.ObjectKeyFromObject(ud)
	if m, ok := r.templates.Load(key); ok && m.(rememberedTemplate).uid == cr.UID {
		return m.(rememberedTemplate).template, nil
	}
	t, err := r.readRevision(ctx, ud, cr)
	if err != nil {
		return revision.Template{}, err
	}
	r.templates.Store(key, rememberedTemplate{cr.UID, t})
	return t, nil
}

// readRevision reads the template cr records from the API server (the
// cache keeps no data), if it is the one cached and the app's.
func (r *Reconciler) readRevision(ctx context.Context, ud *schedv1.UserDeployment, cr *appsv1.ControllerRevision) (revision.Template, error) {
	full := &appsv1.ControllerRevision{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ud.Namespace, Name: cr.Name}, full); err != nil {
		return revision.Template{}, err
	}
	if why := revision.Check(full, ud); why != "" || full.UID != cr.UID {
		return revision.Template{}, fmt.Errorf("%w: ControllerRevision %s is %s", revision.ErrUntrusted, cr.Name, cmp.Or(why, "another object than the one cached"))
	}
	t, err := revision.Read(full)
	if err != nil {
		return revision.Template{}, fmt.Errorf("ControllerRevision %s: %w", cr.Name, err)
	}
	return t, nil
}

// forget drops the template remembered for an app that is not rolled back
// (any more), or gone.
func (r *Reconciler) forget(app types.NamespacedName) { r.templates.Delete(app) }

// rollBackTo decides, from the status just computed, whether the spec's
// revision is to be rolled back: the app asks for it (spec.rollback:
// OnDegraded, not Stopped), it is not rolled back already, the revision
// has not become Running within spec.progressDeadline of its start
// (status.currentRevisionTime, else its creation), and the last revision
// that did is another, with another template. It returns that revision's
// number, or 0 and how long until the deadline passes (0 when there is
// nothing to wait for).
func rollBackTo(ud *schedv1.UserDeployment, st *schedv1.UserDeploymentStatus, rv revisions, now time.Time) (int64, time.Duration) {
	cur := rv.current
	switch {
	case ud.Spec.Rollback != schedv1.RollbackOnDegraded, ud.Spec.State == schedv1.StateStopped,
		cur == nil, st.RolledBack != nil, st.Phase == schedv1.UserDeploymentRunning:
		return 0, 0
	}
	last := rv.find(st.LastRunningRevision)
	if last == nil || last.Revision == cur.Revision || last.Labels[schedv1.LabelRevisionHash] == cur.Labels[schedv1.LabelRevisionHash] {
		return 0, 0
	}
	start := cur.CreationTimestamp.Time
	if t := st.CurrentRevisionTime; t != nil && t.After(start) {
		start = t.Time
	}
	if left := start.Add(ud.Spec.Deadline()).Sub(now); left > 0 {
		return 0, left
	}
	return last.Revision, 0
}

// foldRollback folds the rollback rollBackTo decides into st, the status
// just computed: the spec's revision rolled back to the last that ran,
// with the RolledBack condition, and the event that says so once the
// status is written (nil: none). It also returns how long until the
// deadline passes, when the rollback waits for it.
func foldRollback(ud *schedv1.UserDeployment, st schedv1.UserDeploymentStatus, rv revisions, now time.Time) (schedv1.UserDeploymentStatus, *note, time.Duration) {
	to, wait := rollBackTo(ud, &st, rv, now)
	if to == 0 {
		return st, nil, wait
	}
	from := rv.current.Revision
	why := "no reason given"
	for _, c := range st.Conditions {
		if c.Type == schedv1.ConditionReady && c.Message != "" {
			why = c.Message
		}
	}
	st.Conditions = slices.Clone(st.Conditions)
	st.RolledBack = &schedv1.RolledBack{FromRevision: from, ToRevision: to, Time: metav1.NewTime(now).Rfc3339Copy()}
	setRolledBackCondition(ud, &st)
	msg := fmt.Sprintf("revision %d did not become Running within %s (spec.progressDeadline): %s; rolled back to revision %d, the last that did",
		from, ud.Spec.Deadline(), why, to)
	return st, &note{typ: corev1.EventTypeWarning, reason: schedv1.ReasonRolledBack, action: "RollBack", message: clipCondition(msg)}, 0
}

// trimRevisions deletes the oldest revisions beyond spec.revisionHistoryLimit
// (at most the tier's maxRevisions), but never the current one, the last
// that ran, or one rolled back to.
func (r *Reconciler) trimRevisions(ctx context.Context, s *syncState, rv revisions, st *schedv1.UserDeploymentStatus) {
	keep := map[int64]bool{st.CurrentRevision: true, st.LastRunningRevision: true}
	if st.RolledBack != nil {
		keep[st.RolledBack.ToRevision] = true
	}
	excess := len(rv.history) - s.tier.HistoryLimit(&s.ud.Spec)
	for _, cr := range rv.history {
		if excess <= 0 {
			return
		}
		if keep[cr.Revision] {
			continue
		}
		uid := cr.UID
		err := r.Delete(ctx, cr, client.Preconditions{UID: &uid})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			s.errs = append(s.errs, fmt.Errorf("delete ControllerRevision %s: %w", cr.Name, err))
			continue
		default:
			log.FromContext(ctx).Info("Deleted a revision beyond the app's history limit", "revision", cr.Revision, "name", cr.Name)
		}
		excess--
	}
}
