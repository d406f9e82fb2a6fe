// Package userdeployment reconciles UserDeployments: per service a
// Deployment and a ClusterIP Service, the app's ConfigMap, ExternalSecrets
// for external secret references, an Ingress (or a Traefik IngressRoute) for
// public services and a NetworkPolicy, all owned by the UserDeployment so
// the garbage collector removes them with it.
//
// Every reconcile builds the desired objects from the spec (resources.go),
// compares them with the cached ones and writes only what differs, with
// server-side apply; the status comes from a pure function (status.go).
package userdeployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/controlleropts"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// fieldOwner is the server-side apply field manager of every object written.
const fieldOwner = "kubectl-sched-operator"

// conflictRetry is how often an object name taken by someone else is
// checked again: that object is not labelled, so no event announces its end.
const conflictRetry = time.Minute

// Reconciler reconciles UserDeployments.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache: an object the cache lacks may exist
	// without the operator's labels, and must not be taken over.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Settings  Settings

	apis apis
	// optional caches ExternalSecrets and IngressRoutes, selected by label
	// like every owned kind; nil when the cluster serves neither API.
	optional cache.Cache
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

	p := buildPlan(ud, r.Settings, r.apis)
	holder, err := r.hostHolder(ctx, ud, p.host)
	if err != nil {
		return ctrl.Result{}, err
	}
	if holder != "" {
		p.yieldHost(holder)
	}
	targets, err := r.autoscaled(ctx, ud.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	p.leaveReplicasTo(targets)
	owned, err := r.observeOwned(ctx, ud)
	if err != nil {
		return ctrl.Result{}, err
	}
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
	o := observed{deployments: s.deployments, pods: pods, problems: s.problems}
	if p.certificate != "" {
		o.certificate, _ = s.owned[objectKey{certificateGVK.Kind, p.certificate}].(*unstructured.Unstructured)
	}
	ud.Status = computeStatus(ud, p, o)
	if err := r.patchStatus(ctx, ud, before); err != nil {
		if apierrors.IsConflict(err) {
			// Our cache was behind; the newer app may differ only in its
			// status, whose events are filtered out, so come back, with
			// the workqueue's growing backoff should a writer keep racing us.
			return ctrl.Result{}, fmt.Errorf("status of %s is stale, retrying: %w", ud.Name, err)
		}
		return ctrl.Result{}, err
	}
	if err := errors.Join(s.errs...); err != nil {
		return ctrl.Result{}, err
	}
	if s.conflict {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, nil
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
func (r *Reconciler) observeOwned(ctx context.Context, ud *schedv1.UserDeployment) (map[objectKey]client.Object, error) {
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
	for _, gvk := range r.optionalKinds() {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := collect(gvk.Kind, r.optional, list); err != nil {
			return nil, err
		}
	}
	return owned, nil
}

func (r *Reconciler) optionalKinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	if r.apis.externalSecrets {
		out = append(out, externalSecretGVK)
	}
	if r.apis.ingressRoutes {
		out = append(out, ingressRouteGVK)
	}
	if r.apis.certificates {
		out = append(out, certificateGVK)
	}
	return out
}

// applyObjects writes every planned object that is missing or differs from
// the cluster's copy, and nothing else.
func (r *Reconciler) applyObjects(ctx context.Context, s *syncState, p plan) {
	for _, desired := range p.objects {
		form, err := applyForm(desired)
		if err != nil {
			s.errs = append(s.errs, err)
			continue
		}
		key := objectKey{form.GetKind(), form.GetName()}
		current, err := r.ensure(ctx, s, key, form)
		var c *conflictError
		switch {
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			s.terminating = true
			return
		case errors.As(err, &c):
			s.conflict = true
			s.problems = append(s.problems, err.Error())
			continue
		case err != nil:
			s.errs = append(s.errs, fmt.Errorf("apply %s: %w", key, err))
			s.problems = append(s.problems, err.Error())
			continue
		}
		if key.kind == "Deployment" || key.kind == "StatefulSet" {
			dep, err := asDeployment(current)
			if err != nil {
				s.errs = append(s.errs, err)
				continue
			}
			s.deployments[dep.Labels[schedv1.LabelService]] = dep
		}
	}
}

// conflictError: the name is taken by an object the app does not control.
type conflictError struct{ key objectKey }

func (e *conflictError) Error() string {
	return fmt.Sprintf("%s already exists and is not controlled by this UserDeployment; delete or rename it", e.key)
}

// ensure returns the object as it is after writing it if needed.
func (r *Reconciler) ensure(ctx context.Context, s *syncState, key objectKey, form *unstructured.Unstructured) (client.Object, error) {
	current := s.owned[key]
	if current == nil {
		// Not in the cache: new, deleted out of band, or someone else's
		// (the cache holds only labelled objects). Ask the API server; its
		// watch cache (resourceVersion 0) is recent enough to tell.
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(form.GroupVersionKind())
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(form), live, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		case !metav1.IsControlledBy(live, s.ud):
			return nil, &conflictError{key}
		default:
			current = live // ours; the cache is behind or lost our labels
		}
	}
	if current != nil {
		ok, err := inSync(form, current)
		if err != nil || ok {
			return current, err
		}
		if err := r.handOverReplicas(ctx, form, current); err != nil {
			return nil, err
		}
	}
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(form), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return nil, err
	}
	switch {
	case current == nil && s.ud.Status.ObservedGeneration == s.ud.Generation:
		// This spec was already in place, so the object was deleted.
		s.repaired = append(s.repaired, key.String()+" (deleted)")
	case current == nil:
		s.created = append(s.created, key.String())
	case current.GetAnnotations()[annotationApplied] == form.GetAnnotations()[annotationApplied]:
		// Same plan as last applied, different object: edited out of band.
		s.repaired = append(s.repaired, key.String()+" (edited)")
	default:
		log.FromContext(ctx).Info("Updated object to the spec", "kind", key.kind, "name", key.name)
	}
	return form, nil
}

// fieldOwnerHandover co-owns the replicas of a workload an autoscaler took
// over, so that applying it without spec.replicas does not remove the field
// (and reset the workload to one replica): server-side apply's documented
// way to hand a field to another controller.
const fieldOwnerHandover = fieldOwner + "-handover"

// handOverReplicas runs before a workload is applied without spec.replicas.
func (r *Reconciler) handOverReplicas(ctx context.Context, form *unstructured.Unstructured, current client.Object) error {
	if form.GetKind() != "Deployment" && form.GetKind() != "StatefulSet" {
		return nil
	}
	if _, planned, _ := unstructured.NestedFieldNoCopy(form.Object, "spec", "replicas"); planned {
		return nil
	}
	live, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	if err != nil {
		return err
	}
	replicas, found, err := unstructured.NestedInt64(live, "spec", "replicas")
	if err != nil || !found {
		return err
	}
	handover := &unstructured.Unstructured{}
	handover.SetGroupVersionKind(form.GroupVersionKind())
	handover.SetNamespace(form.GetNamespace())
	handover.SetName(form.GetName())
	// Only the value we saw: from a stale cache, forcing it would undo the
	// autoscaler's latest scale. A conflict retries with fresh data.
	handover.SetResourceVersion(current.GetResourceVersion())
	if err := unstructured.SetNestedField(handover.Object, replicas, "spec", "replicas"); err != nil {
		return err
	}
	return r.Apply(ctx, client.ApplyConfigurationFromUnstructured(handover), client.FieldOwner(fieldOwnerHandover), client.ForceOwnership)
}

// autoscaled returns the names of the workloads in ns that a
// HorizontalPodAutoscaler scales.
func (r *Reconciler) autoscaled(ctx context.Context, ns string) (map[string]bool, error) {
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := r.List(ctx, &hpas, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list HorizontalPodAutoscalers: %w", err)
	}
	targets := map[string]bool{}
	for _, h := range hpas.Items {
		ref := h.Spec.ScaleTargetRef
		if gv, _ := schema.ParseGroupVersion(ref.APIVersion); gv.Group == appsv1.GroupName && (ref.Kind == "Deployment" || ref.Kind == "StatefulSet") {
			targets[ref.Name] = true
		}
	}
	return targets, nil
}

// deleteUnwanted removes owned objects the plan no longer has: a removed
// service, an exposure turned to None, config emptied, isolation opened.
func (r *Reconciler) deleteUnwanted(ctx context.Context, s *syncState, p plan) {
	wanted := map[objectKey]bool{}
	for _, o := range p.objects {
		gvk := o.GetObjectKind().GroupVersionKind()
		wanted[objectKey{gvk.Kind, o.GetName()}] = true
	}
	for key, obj := range s.owned {
		if wanted[key] {
			continue
		}
		uid := obj.GetUID()
		err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			s.errs = append(s.errs, fmt.Errorf("delete %s: %w", key, err))
		default:
			s.deleted = append(s.deleted, key.String())
		}
	}
}

// recordChanges logs and reports what this reconcile changed, one event per
// kind of change.
func (r *Reconciler) recordChanges(ctx context.Context, s *syncState) {
	lg := log.FromContext(ctx)
	for _, c := range []struct {
		names          []string
		reason, action string
		note           string
		typ            string
	}{
		{s.created, schedv1.ReasonCreated, "Create", "created %s", corev1.EventTypeNormal},
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

// SetupWithManager watches UserDeployments, everything they own and their
// pods (whose states explain a service that does not become ready). The
// optional APIs are looked up once, here: the operator must be restarted to
// use External Secrets or Traefik installed after it started.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	lg := mgr.GetLogger().WithName("userdeployment")
	var err error
	if r.apis.externalSecrets, err = served(mgr.GetRESTMapper(), externalSecretGVK); err != nil {
		return err
	}
	if r.apis.ingressRoutes, err = served(mgr.GetRESTMapper(), ingressRouteGVK); err != nil {
		return err
	}
	if r.apis.certificates, err = served(mgr.GetRESTMapper(), certificateGVK); err != nil {
		return err
	}
	if r.Settings.ClusterIssuer != "" && !r.apis.certificates {
		lg.Info("cert-manager Certificates are not served; public apps get no certificates", "api", certificateGVK.GroupVersion().String(), "clusterIssuer", r.Settings.ClusterIssuer)
	}
	if r.Settings.IngressProvider == "traefik" && !r.apis.ingressRoutes {
		lg.Info("Traefik IngressRoutes are not served; public services get Ingresses", "api", ingressRouteGVK.GroupVersion().String())
	}

	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &schedv1.UserDeployment{}, indexHost, r.hostIndex); err != nil {
		return fmt.Errorf("index apps by host: %w", err)
	}
	byAppLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[schedv1.LabelUserDeployment]}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).
		// Our own status writes change nothing to do.
		For(&schedv1.UserDeployment{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&networkingv1.Ingress{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&corev1.Pod{}, byAppLabel, builder.WithPredicates(podCauseChanged)).
		// An autoscaler added or removed changes who sets replicas.
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.appOfScaleTarget)).
		// A host's holder letting go (deleted, or routing another host)
		// hands it to the next claimant. Both the old and the new object
		// are mapped on an update.
		Watches(&schedv1.UserDeployment{}, handler.EnqueueRequestsFromMapFunc(r.otherClaimants),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))

	if kinds := r.optionalKinds(); len(kinds) > 0 {
		// The manager's cache cannot be told about these kinds before it
		// knows they exist, so they get their own, selected the same way.
		r.optional, err = cache.New(mgr.GetConfig(), cache.Options{
			HTTPClient:           mgr.GetHTTPClient(),
			Scheme:               mgr.GetScheme(),
			Mapper:               mgr.GetRESTMapper(),
			DefaultLabelSelector: labels.SelectorFromSet(labels.Set{schedv1.LabelManagedBy: schedv1.ManagedByValue}),
			DefaultTransform:     cache.TransformStripManagedFields(),
		})
		if err != nil {
			return fmt.Errorf("cache for optional APIs: %w", err)
		}
		if err := mgr.Add(r.optional); err != nil {
			return err
		}
		for _, gvk := range kinds {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			b = b.WatchesRawSource(source.Kind(r.optional, u,
				handler.TypedEnqueueRequestForOwner[*unstructured.Unstructured](mgr.GetScheme(), mgr.GetRESTMapper(), &schedv1.UserDeployment{}, handler.OnlyControllerOwner())))
		}
		lg.Info("Optional APIs found", "externalSecrets", r.apis.externalSecrets, "ingressRoutes", r.apis.ingressRoutes, "certificates", r.apis.certificates)
	}
	return b.
		WithOptions(controlleropts.New(maxConcurrent)).
		Named("userdeployment").
		Complete(r)
}

// podCauseChanged passes the pod events that can change an app's status:
// the status reads pods only for why they do not run (podstatus.Cause), and
// takes replica counts from the Deployments. A pod starting normally is
// several updates that change neither.
var podCauseChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		return isAppPod(e.Object) && podCause(e.Object) != ""
	},
	UpdateFunc: func(e event.UpdateEvent) bool {
		if !isAppPod(e.ObjectNew) {
			return false
		}
		wasDeleting, deleting := e.ObjectOld.GetDeletionTimestamp() != nil, e.ObjectNew.GetDeletionTimestamp() != nil
		return wasDeleting != deleting || podCause(e.ObjectOld) != podCause(e.ObjectNew)
	},
	DeleteFunc:  func(e event.DeleteEvent) bool { return isAppPod(e.Object) },
	GenericFunc: func(e event.GenericEvent) bool { return isAppPod(e.Object) },
}

func isAppPod(o client.Object) bool {
	_, ok := o.GetLabels()[schedv1.LabelUserDeployment]
	return ok
}

func podCause(o client.Object) string {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return ""
	}
	if reason, msg := podstatus.Cause(pod); reason != "" {
		return reason + ": " + msg
	}
	return ""
}

// served reports whether the API server serves gvk.
func served(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up %s: %w", gvk, err)
	}
	return true, nil
}

// appOfScaleTarget maps an autoscaler to the app whose workload it scales.
func (r *Reconciler) appOfScaleTarget(ctx context.Context, o client.Object) []reconcile.Request {
	hpa, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	key := types.NamespacedName{Namespace: hpa.Namespace, Name: hpa.Spec.ScaleTargetRef.Name}
	var target client.Object
	switch hpa.Spec.ScaleTargetRef.Kind {
	case "Deployment":
		target = &appsv1.Deployment{}
	case "StatefulSet":
		target = &appsv1.StatefulSet{}
	default:
		return nil
	}
	if err := r.Get(ctx, key, target); err != nil {
		return nil // not one of ours: the cache holds only labelled workloads
	}
	if app := target.GetLabels()[schedv1.LabelUserDeployment]; app != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: hpa.Namespace, Name: app}}}
	}
	return nil
}
