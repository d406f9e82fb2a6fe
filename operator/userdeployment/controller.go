package userdeployment

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
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
	// writer writes the apps' status (SetupWithManager gives it the client).
	writer status.Writer
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

// Reconcile brings one app's objects to the plan and reports on them, as
// its phases (scope.go) in order. Deletion needs nothing: every object
// carries an owner reference.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ud := &schedv1.UserDeployment{}
	if err := r.Get(ctx, req.NamespacedName, ud); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ud.DeletionTimestamp.IsZero() {
		r.writer.Forget(ud)
		return ctrl.Result{}, nil
	}
	s := &scope{
		syncState: syncState{ud: ud, deployments: map[string]*appsv1.Deployment{}},
		before:    *ud.Status.DeepCopy(),
	}
	return phase.Run(ctx, s,
		r.readTier,
		r.recordRevision,
		r.planApp,
		r.applyPlan,
		r.deleteAndReport,
		r.observeRunning,
		r.writeStatus,
		r.tidyUp,
		recheck,
	)
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

// phaseEvent is the event that tells of an app's phase going from was to
// st's, and whether there is one: Running and Stopped are reached,
// Degraded is a warning; Pending and Progressing are on the way, and the
// status shows them.
func phaseEvent(was schedv1.UserDeploymentPhase, st *schedv1.UserDeploymentStatus) (note, bool) {
	ready := meta.FindStatusCondition(st.Conditions, schedv1.ConditionReady)
	if was == st.Phase || ready == nil {
		return note{}, false
	}
	n := note{reason: ready.Reason, action: string(st.Phase), message: ready.Message}
	switch st.Phase {
	case schedv1.UserDeploymentRunning, schedv1.UserDeploymentStopped:
		n.typ = corev1.EventTypeNormal
	case schedv1.UserDeploymentDegraded:
		n.typ = corev1.EventTypeWarning
	default:
		return note{}, false
	}
	return n, true
}

// note is an event to record.
type note struct{ typ, reason, action, message string }
