// Package userdeployment reconciles UserDeployments: per service a
// Deployment and a ClusterIP Service, the app's ConfigMap, ExternalSecrets
// for external secret references, an Ingress (or a Traefik IngressRoute) for
// public services and a NetworkPolicy, all owned by the UserDeployment so
// the garbage collector removes them with it.
//
// Every reconcile (controller.go) builds the desired objects from the spec
// (resources.go), compares them with the cached ones and writes only what
// differs, with server-side apply (apply.go); the status comes from a pure
// function (status.go). What wakes it up is in watches.go.
package userdeployment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/optionalapi"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// fieldOwner is the server-side apply field manager of every object written.
const fieldOwner = "kubectl-sched-operator"

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
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses;networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=external-secrets.io,resources=externalsecrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=traefik.io,resources=ingressroutes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete
// Namespaces carry the hosts outside the ingress domain that their apps may
// route (schedv1.AnnotationAllowedHosts), and whether an admin opted one out
// of the restricted default.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile brings one app's objects to the plan and reports on them.
// Deletion needs nothing: every object carries an owner reference.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ud := &schedv1.UserDeployment{}
	if err := r.Get(ctx, req.NamespacedName, ud); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ud.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	notAllowed, err := r.privilegeRefused(ctx, ud)
	if err != nil {
		return ctrl.Result{}, err
	}
	// One view of the optional APIs for the whole reconcile.
	a := r.apisInUse()
	var p plan
	if len(notAllowed) == 0 {
		p = buildPlan(ud, r.Settings, a)
	} else {
		p = buildPlan(withoutPrivilege(ud, notAllowed), r.Settings, a)
		p.notAllowed = map[string]string{}
		for svc, fields := range notAllowed {
			p.notAllowed[svc] = "not started: " + podsecurity.NotAllowed(ud.Namespace, fields) + "; remove the field(s) and the service starts again"
		}
	}
	owned, err := r.observeOwned(ctx, ud, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	heldByRoute := false
	if p.host != "" && p.routeWithheld.reason == "" {
		reason, msg, foreign, err := r.routeProblem(ctx, ud, p.host, owned)
		if err != nil {
			return ctrl.Result{}, err
		}
		if reason != "" {
			p.withholdRoute(reason, msg)
		}
		heldByRoute = foreign
	}
	targets, err := r.autoscaled(ctx, ud.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	p.leaveReplicasTo(targets)
	s := &syncState{ud: ud, owned: owned, deployments: map[string]*appsv1.Deployment{}}
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

	before := ud.Status.DeepCopy()
	now := time.Now()
	o := observed{deployments: s.deployments, pods: pods, problems: s.problems, now: now}
	if p.certificate != "" {
		o.certificate, _ = s.owned[objectKey{certificateGVK.Kind, p.certificate}].(*unstructured.Unstructured)
	}
	ud.Status = computeStatus(ud, p, o)
	if err := r.patchStatus(ctx, ud, before); err != nil {
		return ctrl.Result{}, err // a Conflict too: see status.Patch
	}
	if err := errors.Join(s.errs...); err != nil {
		return ctrl.Result{}, err
	}
	// A progress deadline passes with no event to say so.
	after := recheckAfter(ud.Spec.Deadline(), ud.Status, now)
	if s.conflict || heldByRoute {
		after = min(conflictRetry, cmp.Or(after, conflictRetry))
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// privilegeRefused lists, by service, the fields that ask for privilege
// when the app's namespace is not, or no longer, opted out. Admission
// refuses such a spec from the start; this catches what was admitted while
// an admin's opt-out label was there. The cache decides: should it lag
// behind a new label, the label's event brings the app back.
func (r *Reconciler) privilegeRefused(ctx context.Context, ud *schedv1.UserDeployment) (map[string][]string, error) {
	asked := privilegeAsked(ud)
	if len(asked) == 0 {
		return nil, nil
	}
	allowed, err := podsecurity.AllowsPrivileged(ctx, r.Client, nil, ud.Namespace)
	if err != nil || allowed {
		return nil, err
	}
	return asked, nil
}

// syncState collects what one reconcile did and found.
type syncState struct {
	ud    *schedv1.UserDeployment
	owned map[objectKey]client.Object
	// deployments as written or found, by service name, for the status.
	deployments map[string]*appsv1.Deployment

	created, repaired, deleted []string
	problems                   []string // for the status: what could not be written
	errs                       []error  // to retry with backoff
	conflict                   bool
	terminating                bool // the namespace refuses new objects
}

// objectKey identifies an owned object; the kinds' names do not collide.
type objectKey struct{ kind, name string }

func (k objectKey) String() string { return k.kind + " " + k.name }

// builtinKinds are the built-in kinds the controller creates, with how to
// list them.
var builtinKinds = []struct {
	kind string
	list func() client.ObjectList
}{
	{"Deployment", func() client.ObjectList { return &appsv1.DeploymentList{} }},
	{"StatefulSet", func() client.ObjectList { return &appsv1.StatefulSetList{} }},
	{"Service", func() client.ObjectList { return &corev1.ServiceList{} }},
	{"ConfigMap", func() client.ObjectList { return &corev1.ConfigMapList{} }},
	{"Ingress", func() client.ObjectList { return &networkingv1.IngressList{} }},
	{"NetworkPolicy", func() client.ObjectList { return &networkingv1.NetworkPolicyList{} }},
}

// observeOwned lists, from the caches, the objects ud controls.
func (r *Reconciler) observeOwned(ctx context.Context, ud *schedv1.UserDeployment, a apis) (map[objectKey]client.Object, error) {
	owned := map[objectKey]client.Object{}
	// A label lookup scans the namespace's cached objects of the kind; an
	// index would make it a lookup but costs about 0.4 KiB per cached
	// object (measured by operator/bench/heap), which matters more.
	opts := []client.ListOption{client.InNamespace(ud.Namespace), client.MatchingLabels{schedv1.LabelUserDeployment: ud.Name}}
	collect := func(kind string, reader client.Reader, list client.ObjectList) error {
		if err := reader.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("list %ss: %w", kind, err)
		}
		return meta.EachListItem(list, func(o runtime.Object) error {
			if obj := o.(client.Object); metav1.IsControlledBy(obj, ud) {
				owned[objectKey{kind, obj.GetName()}] = obj
			}
			return nil
		})
	}
	for _, k := range builtinKinds {
		if err := collect(k.kind, r.Client, k.list()); err != nil {
			return nil, err
		}
	}
	for _, gvk := range a.kinds() {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := collect(gvk.Kind, r.optional, list); err != nil {
			return nil, err
		}
	}
	return owned, nil
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

func (r *Reconciler) observePods(ctx context.Context, ud *schedv1.UserDeployment) (map[string][]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ud.Namespace), client.MatchingLabels{schedv1.LabelUserDeployment: ud.Name}); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	pods := map[string][]corev1.Pod{}
	for _, pod := range list.Items {
		svc := pod.Labels[schedv1.LabelService]
		pods[svc] = append(pods[svc], pod)
	}
	return pods, nil
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

// asDeployment reads a service's workload, a Deployment or a StatefulSet
// (seen through statefulSetView).
func asDeployment(obj client.Object) (*appsv1.Deployment, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o, nil
	case *appsv1.StatefulSet:
		return statefulSetView(o), nil
	case *unstructured.Unstructured:
		if o.GetKind() == "StatefulSet" {
			sts := &appsv1.StatefulSet{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, sts); err != nil {
				return nil, fmt.Errorf("read StatefulSet %s: %w", o.GetName(), err)
			}
			return statefulSetView(sts), nil
		}
		dep := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep); err != nil {
			return nil, fmt.Errorf("read Deployment %s: %w", o.GetName(), err)
		}
		return dep, nil
	}
	return nil, fmt.Errorf("unexpected %T for a Deployment", obj)
}
