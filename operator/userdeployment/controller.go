package userdeployment

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/optionalapi"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// conflictRetry is how often an object name taken by someone else, or a
// host that another namespace's route serves, is checked again: no event
// need announce their end (a name's holder is not labelled, and a host
// regular expression is not indexed).
const conflictRetry = time.Minute

// Reconciler reconciles UserDeployments.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache: an object the cache lacks may exist
	// without the operator's labels, and must not be taken over.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Settings  Settings

	// APIs says which optional APIs the cluster serves; SetupWithManager
	// makes one when nil.
	APIs *optionalapi.Watcher
	// StatusNamespace holds the status Lease on which the operator reports
	// the optional APIs (optionalapi.Reporter); none when empty.
	StatusNamespace string

	// mu guards apis and apiNotes. apis are the optional APIs in use: served
	// and their caches synced (optional.go); each reconcile reads them once.
	mu       sync.RWMutex
	apis     apis
	apiNotes map[string]string // why a served API is not in use yet, by CRD
	// ready is closed once the APIs served at start are in use or failed
	// once; the controller's workers wait for it (optionalSource).
	ready chan struct{}
	// queue is the controller's, once it runs, for the optional APIs'
	// events and for requeueing the apps an API change concerns.
	queue    atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
	reporter *optionalapi.Reporter
	scheme   *runtime.Scheme
	mapper   meta.RESTMapper

	// optional caches ExternalSecrets, IngressRoutes and Certificates,
	// selected by label like every owned kind, each while its API is served.
	optional cache.Cache
	// routes caches every Ingress and, while Traefik is served,
	// IngressRoute of the cluster, trimmed to their hosts, and routeIndexes
	// are its informers' host indexes (routecache.go), guarded by routeMu.
	routes       cache.Cache
	routeMu      sync.RWMutex
	routeIndexes []routeKindIndex

	// templates remembers, per app rolled back, the template of the
	// revision it runs (revisions.go).
	templates sync.Map
}

// The operator writes only objects it owns, in the app's namespace. It never
// reads Secrets: pods reference them by name and the kubelet reads them.
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=userdeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=userdeployments/status,verbs=get;update;patch
// Owner references with blockOwnerDeletion need this where the
// OwnerReferencesPermissionEnforcement admission plugin runs.
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=userdeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;patch;delete
// Pods: deleted only when failed (evicted) and not a service's latest
// (kubectl-sched-operator-pod-patch).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses;networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=external-secrets.io,resources=externalsecrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=traefik.io,resources=ingressroutes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete
// Namespaces carry the hosts outside the ingress domain that their apps may
// route (schedv1.AnnotationAllowedHosts), and whether an admin opted one out
// of the restricted default.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// The tier's quota carries its default PriorityClass and its bound on
// revisions.
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch

// Reconcile brings one app's objects to the plan and reports on them.
// Deletion needs nothing: every object carries an owner reference.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ud := &schedv1.UserDeployment{}
	if err := r.Get(ctx, req.NamespacedName, ud); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ud.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	limits, err := tiers.LimitsOf(ctx, r.Client, ud.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	s := &syncState{ud: ud, deployments: map[string]*appsv1.Deployment{}, tier: limits}
	// The spec's revision, recorded first: a crash after this finds it
	// again. The plan builds what runs: the spec, or the revision rolled
	// back to restored into it.
	rv, err := r.revisionsOf(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	run := ud
	if rv.restored != nil {
		run = rv.restored
	}
	// One view of the optional APIs for the whole reconcile.
	a := r.apisInUse()
	p, err := r.planFor(ctx, run, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	if limits != nil {
		p.defaultPriorityClass(limits.DefaultPriorityClass)
	}
	owned, err := r.observeOwned(ctx, ud, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.owned = owned
	heldByRoute, err := r.checkHost(ctx, ud, &p, owned)
	if err != nil {
		return ctrl.Result{}, err
	}
	targets, err := r.autoscaled(ctx, ud.Namespace, p.objects)
	if err != nil {
		return ctrl.Result{}, err
	}
	p.leaveReplicasTo(targets)
	r.applyObjects(ctx, s, p)
	if s.terminating {
		// The namespace is being deleted, and the app with it.
		return ctrl.Result{}, nil
	}
	r.deleteUnwanted(ctx, s, p)
	r.recordChanges(ctx, s)
	pods, err := r.observePods(ctx, ud)
	if err != nil {
		return ctrl.Result{}, err
	}
	noCPUScheduler, err := r.cpuSchedulerCause(ctx, ud, pods)
	if err != nil {
		return ctrl.Result{}, err
	}

	before := ud.Status.DeepCopy()
	now := time.Now()
	o := observed{deployments: s.deployments, pods: pods, problems: s.problems, now: now, noCPUScheduler: noCPUScheduler,
		runRevision: rv.run, rolledBack: rv.rolledBack}
	if rv.current != nil {
		o.currentRevision, o.currentCreated = rv.current.Revision, rv.current.CreationTimestamp.Time
	}
	if p.certificate != "" {
		o.certificate, _ = s.owned[objectKey{certificateGVK.Kind, p.certificate}].(*unstructured.Unstructured)
	}
	ud.Status = computeStatus(ud, p, o)
	// A revision that does not become Running is rolled back once its
	// deadline passes: the status says so first, and the next reconcile
	// builds the app from the revision rolled back to.
	to, rollbackIn := rollBackTo(ud, &ud.Status, rv, now)
	var announce func()
	if to > 0 {
		announce = r.rollBack(ctx, ud, &ud.Status, rv.current.Revision, to, now)
	}
	if err := r.patchStatus(ctx, ud, before); err != nil {
		return ctrl.Result{}, err // a Conflict too: see status.Patch
	}
	if announce != nil {
		announce()
		// The status write wakes nothing up (SetupWithManager).
		return ctrl.Result{RequeueAfter: time.Millisecond}, nil
	}
	s.errs = append(s.errs, r.moveOffDetached(ctx, ud, pods, s.deployments), r.deleteFailedPods(ctx, pods))
	r.trimRevisions(ctx, s, rv, &ud.Status)
	if err := errors.Join(s.errs...); err != nil {
		return ctrl.Result{}, err
	}
	// A progress deadline passes with no event to say so.
	after := recheckAfter(ud.Spec.Deadline(), ud.Status, now)
	if rollbackIn > 0 {
		after = min(rollbackIn, cmp.Or(after, rollbackIn))
	}
	if s.conflict || heldByRoute {
		after = min(conflictRetry, cmp.Or(after, conflictRetry))
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// syncState collects what one reconcile did and found.
type syncState struct {
	ud *schedv1.UserDeployment
	// tier is what the namespace's tier says; nil without one.
	tier  *tiers.Limits
	owned map[objectKey]client.Object
	// deployments as written or found, by service name, for the status.
	deployments map[string]*appsv1.Deployment

	created, repaired, deleted []string
	problems                   []string // for the status: what could not be written
	errs                       []error  // to retry with backoff
	conflict                   bool
	terminating                bool // the namespace refuses new objects
}

// recordChanges logs and reports what this reconcile changed, one event per
// kind of change. A new app's first objects get no event: its status says
// it is being created, and the Running event says when it is up; each event
// is an API write, and a new app's writes are its cost beside applying the
// same objects directly.
func (r *Reconciler) recordChanges(ctx context.Context, s *syncState) {
	lg := log.FromContext(ctx)
	created := s.created
	if s.ud.Status.ObservedGeneration == 0 {
		if len(created) > 0 {
			lg.Info("Created the app's objects", "objects", created)
		}
		created = nil
	}
	for _, c := range []struct {
		names          []string
		reason, action string
		note           string
		typ            string
	}{
		{created, schedv1.ReasonCreated, "Create", "created %s", corev1.EventTypeNormal},
		{s.repaired, schedv1.ReasonRepaired, "Repair", "restored %s, changed out of band", corev1.EventTypeWarning},
		{s.deleted, schedv1.ReasonDeleted, "Delete", "deleted %s, no longer in the spec", corev1.EventTypeNormal},
	} {
		if len(c.names) == 0 {
			continue
		}
		lg.Info("Changed objects", "action", c.action, "objects", c.names)
		r.Recorder.Eventf(s.ud, nil, c.typ, c.reason, c.action, c.note, strings.Join(c.names, ", "))
	}
}

// patchStatus writes the status only when it changed, with an event when
// the app reaches Running, Stopped or Degraded.
func (r *Reconciler) patchStatus(ctx context.Context, ud *schedv1.UserDeployment, before *schedv1.UserDeploymentStatus) error {
	old := ud.DeepCopy()
	old.Status = *before
	if wrote, err := status.Patch(ctx, r.Client, ud, old); err != nil || !wrote {
		return err
	}
	if before.Phase == ud.Status.Phase {
		return nil
	}
	ready := meta.FindStatusCondition(ud.Status.Conditions, schedv1.ConditionReady)
	log.FromContext(ctx).Info("UserDeployment phase changed", "from", before.Phase, "to", ud.Status.Phase, "reason", ready.Reason)
	switch ud.Status.Phase {
	case schedv1.UserDeploymentRunning, schedv1.UserDeploymentStopped:
		r.Recorder.Eventf(ud, nil, corev1.EventTypeNormal, ready.Reason, string(ud.Status.Phase), "%s", ready.Message)
	case schedv1.UserDeploymentDegraded:
		r.Recorder.Eventf(ud, nil, corev1.EventTypeWarning, ready.Reason, string(ud.Status.Phase), "%s", ready.Message)
	}
	// Pending and Progressing are on the way; the status shows them.
	return nil
}
