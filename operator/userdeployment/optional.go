package userdeployment

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubectl-sched/kubectl-sched/api/operatorstatus"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/optionalapi"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// The optional APIs while the operator runs. The optionalapi.Watcher says
// which the cluster serves; follow, one goroutine per API on every
// replica, makes the controller use it:
//   - when it is served, follow starts the informers the controller reads
//     (the app's own objects of the kind in r.optional; for IngressRoutes
//     also every route's hosts in r.routes), waits for them to sync, and
//     only then marks the API in use and requeues the apps it concerns;
//   - when it no longer is (its CRD deleted, being deleted, or not serving
//     the version used), follow marks it unused first, then stops the
//     informers, and requeues the same apps, which are then planned as if
//     the operator had started without it: services that need external
//     secrets wait at zero replicas, public apps get Ingresses and no
//     Certificate. A reconcile that read the old view meanwhile fails to
//     list the stopped informer and is retried.
// The controller's workers start once the APIs served at start are in
// use (optionalSource), so no app is planned without an API it has.

// apis records which optional APIs the operator uses: the cluster serves
// them and their caches are synced (follow).
type apis struct {
	externalSecrets bool
	ingressRoutes   bool
	certificates    bool
}

// has reports whether api is in use.
func (a apis) has(api optionalapi.API) bool { return *a.field(&api) }

// with is a with api in use or not.
func (a apis) with(api optionalapi.API, inUse bool) apis {
	*a.field(&api) = inUse
	return a
}

func (a *apis) field(api *optionalapi.API) *bool {
	switch api.GVK {
	case externalSecretGVK:
		return &a.externalSecrets
	case ingressRouteGVK:
		return &a.ingressRoutes
	case certificateGVK:
		return &a.certificates
	}
	return new(bool)
}

// kinds are the optional kinds in use, which the app's objects may include.
func (a apis) kinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, api := range optionalapi.All {
		if a.has(api) {
			out = append(out, api.GVK)
		}
	}
	return out
}

// Optional APIs, handled as unstructured so the operator needs neither
// project's Go module.
var (
	externalSecretGVK = optionalapi.ExternalSecrets.GVK
	ingressRouteGVK   = optionalapi.Traefik.GVK
	certificateGVK    = optionalapi.CertManager.GVK
)

// apiRetry bounds the wait between tries to start an API's informers (its
// group may not be in discovery yet right after the CRD is established).
const apiRetry = 30 * time.Second

// apisInUse is the reconcilers' view of the optional APIs.
func (r *Reconciler) apisInUse() apis {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.apis
}

func (r *Reconciler) setInUse(api optionalapi.API, inUse bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.apis = r.apis.with(api, inUse)
}

// note says why a served API is not in use yet; "" clears it.
func (r *Reconciler) note(api optionalapi.API, why string) {
	r.mu.Lock()
	if why == "" {
		delete(r.apiNotes, api.CRD())
	} else {
		r.apiNotes[api.CRD()] = why
	}
	r.mu.Unlock()
	r.reportChanged()
}

// reportChanged has the status Lease brought up to date.
func (r *Reconciler) reportChanged() {
	if r.reporter != nil {
		r.reporter.Changed()
	}
}

// apiFollower runs follow for each optional API.
type apiFollower struct{ r *Reconciler }

// NeedLeaderElection is false: a standby keeps its caches current, so it
// takes over with them synced.
func (f apiFollower) NeedLeaderElection() bool { return false }

func (f apiFollower) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("userdeployment").WithName("optional-apis"))
	var first, all sync.WaitGroup
	first.Add(len(optionalapi.All))
	go func() {
		first.Wait()
		close(f.r.ready)
	}()
	for _, api := range optionalapi.All {
		all.Go(func() {
			var once sync.Once
			f.r.follow(ctx, api, func() { once.Do(first.Done) })
		})
	}
	all.Wait()
	return nil
}

// follow keeps the controller's use of api in step with the cluster until
// ctx ends; firstPass is called once the API's status at start is acted on.
func (r *Reconciler) follow(ctx context.Context, api optionalapi.API, firstPass func()) {
	defer firstPass()
	lg := log.FromContext(ctx).WithValues("api", api.String())
	ctx = log.IntoContext(ctx, lg)
	inUse := false
	for {
		st := r.APIs.Status(api)
		switch {
		case st.Served && !inUse:
			inUse = r.startUsing(ctx, api, st)
		case !st.Served && inUse:
			lg.Info("Optional API no longer served; the apps that used it are planned without it", "reason", st.Reason)
			r.stopUsing(ctx, api)
			inUse = false
		}
		firstPass()
		r.reportChanged()
		select {
		case <-ctx.Done():
			return
		case <-st.Changed:
		}
	}
}

// startUsing starts the informers api needs and, once they are synced,
// marks it in use. It gives up, leaving nothing behind, when the status st
// changes or ctx ends first, and reports whether it succeeded.
func (r *Reconciler) startUsing(ctx context.Context, api optionalapi.API, st optionalapi.Status) bool {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-st.Changed:
			cancel()
		case <-actx.Done():
		}
	}()
	r.note(api, "the operator is starting its watch")
	defer r.note(api, "")

	owned := &unstructured.Unstructured{}
	owned.SetGroupVersionKind(api.GVK)
	inf, err := r.informer(actx, api, r.optional, owned)
	if err != nil {
		r.stopInformers(ctx, api)
		return false
	}
	if _, err := inf.AddEventHandler(r.eventsTo(ctx, handler.EnqueueRequestForOwner(r.scheme, r.mapper, &schedv1.UserDeployment{}, handler.OnlyControllerOwner()))); err != nil {
		log.FromContext(ctx).Error(err, "Cannot watch an optional API")
		r.stopInformers(ctx, api)
		return false
	}
	synced := []toolscache.InformerSynced{inf.HasSynced}
	var idx toolscache.Indexer
	if api == optionalapi.Traefik {
		// Every IngressRoute's hosts, which other apps' hosts must not take.
		rinf, err := r.informer(actx, api, r.routes, newIngressRoute())
		if err == nil {
			idx, err = withHostIndex(rinf)
		}
		if err == nil {
			_, err = rinf.AddEventHandler(r.eventsTo(ctx, handler.EnqueueRequestsFromMapFunc(r.appsOfRoute), routeChanged))
		}
		if err != nil {
			log.FromContext(ctx).Error(err, "Cannot watch IngressRoutes")
			r.stopInformers(ctx, api)
			return false
		}
		synced = append(synced, rinf.HasSynced)
	}
	if !toolscache.WaitForCacheSync(actx.Done(), synced...) {
		r.stopInformers(ctx, api)
		return false
	}
	if idx != nil {
		r.setRouteIndex(ingressRouteGVK.Kind, idx)
	}
	r.setInUse(api, true)
	log.FromContext(ctx).Info("Using an optional API")
	r.requeue(ctx, api)
	return true
}

// stopUsing marks api unused, then stops its informers.
func (r *Reconciler) stopUsing(ctx context.Context, api optionalapi.API) {
	r.setInUse(api, false)
	r.stopInformers(ctx, api)
	r.requeue(ctx, api)
}

func (r *Reconciler) stopInformers(ctx context.Context, api optionalapi.API) {
	owned := &unstructured.Unstructured{}
	owned.SetGroupVersionKind(api.GVK)
	if err := r.optional.RemoveInformer(ctx, owned); err != nil {
		log.FromContext(ctx).Error(err, "Cannot stop an informer", "kind", api.GVK.Kind)
	}
	if api == optionalapi.Traefik {
		r.setRouteIndex(ingressRouteGVK.Kind, nil)
		if err := r.routes.RemoveInformer(ctx, newIngressRoute()); err != nil {
			log.FromContext(ctx).Error(err, "Cannot stop an informer", "kind", api.GVK.Kind)
		}
	}
}

// informer gets obj's informer from c, trying again while the API server
// does not know the kind yet, until ctx ends.
func (r *Reconciler) informer(ctx context.Context, api optionalapi.API, c cache.Cache, obj client.Object) (cache.Informer, error) {
	wait := time.Second
	for {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err == nil {
			return inf, nil
		}
		r.note(api, "the operator cannot watch it yet: "+err.Error())
		log.FromContext(ctx).Info("Cannot watch an optional API yet; retrying", "error", err.Error(), "after", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, apiRetry)
	}
}

// eventsTo feeds an informer's events through h and preds to the
// controller's queue once the controller runs; before that, its start
// reconciles every app anyway.
func (r *Reconciler) eventsTo(ctx context.Context, h handler.EventHandler, preds ...predicate.Predicate) toolscache.ResourceEventHandler {
	queue := func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
		if q := r.queue.Load(); q != nil {
			return *q
		}
		return nil
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			o, ok := obj.(client.Object)
			q := queue()
			if !ok || q == nil {
				return
			}
			e := event.CreateEvent{Object: o}
			if slices.ContainsFunc(preds, func(p predicate.Predicate) bool { return !p.Create(e) }) {
				return
			}
			h.Create(ctx, e, q)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := oldObj.(client.Object)
			n, okNew := newObj.(client.Object)
			q := queue()
			if !okOld || !okNew || q == nil {
				return
			}
			e := event.UpdateEvent{ObjectOld: o, ObjectNew: n}
			if slices.ContainsFunc(preds, func(p predicate.Predicate) bool { return !p.Update(e) }) {
				return
			}
			h.Update(ctx, e, q)
		},
		DeleteFunc: func(obj any) {
			e := event.DeleteEvent{}
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj, e.DeleteStateUnknown = t.Obj, true
			}
			o, ok := obj.(client.Object)
			q := queue()
			if !ok || q == nil {
				return
			}
			e.Object = o
			if slices.ContainsFunc(preds, func(p predicate.Predicate) bool { return !p.Delete(e) }) {
				return
			}
			h.Delete(ctx, e, q)
		},
	}
}

// requeue reconciles the apps whose plan depends on api, when the
// controller runs (its start reconciles them all).
func (r *Reconciler) requeue(ctx context.Context, api optionalapi.API) {
	q := r.queue.Load()
	if q == nil {
		return
	}
	var list schedv1.UserDeploymentList
	if err := r.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "Cannot list the apps an optional API concerns", "api", api.String())
		return
	}
	reqs := watch.Requests(&list, func(o client.Object) bool { return needs(o.(*schedv1.UserDeployment), api, r.Settings) })
	for _, req := range reqs {
		(*q).Add(req)
	}
	log.FromContext(ctx).Info("Requeued the apps an optional API concerns", "api", api.String(), "apps", len(reqs))
}

// needs reports whether ud's plan depends on api under s.
func needs(ud *schedv1.UserDeployment, api optionalapi.API, s Settings) bool {
	switch api {
	case optionalapi.ExternalSecrets:
		return slices.ContainsFunc(ud.Spec.Secrets, func(ref schedv1.SecretReference) bool { return ref.External != nil })
	case optionalapi.CertManager:
		return s.ClusterIssuer != "" && len(publicRoutes(ud)) > 0
	case optionalapi.Traefik:
		return s.IngressProvider == "traefik" && len(publicRoutes(ud)) > 0
	}
	return false
}

// optionalSource hands the controller's queue to the optional APIs'
// events, and holds its workers back until the APIs served at start are
// in use (the controller fails to start after its cache sync timeout
// otherwise, as it would for any cache that does not sync).
type optionalSource struct{ r *Reconciler }

func (s optionalSource) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.r.queue.Store(&q)
	return nil
}

func (s optionalSource) WaitForSync(ctx context.Context) error {
	select {
	case <-s.r.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the optional APIs the cluster serves are not watched yet: %w", ctx.Err())
	}
}

func (s optionalSource) String() string { return "optional APIs" }

// report is what the status Lease says of each optional API.
func (r *Reconciler) report() []operatorstatus.OptionalAPI {
	r.mu.RLock()
	inUse, notes := r.apis, make(map[string]string, len(r.apiNotes))
	for k, v := range r.apiNotes {
		notes[k] = v
	}
	r.mu.RUnlock()
	out := make([]operatorstatus.OptionalAPI, 0, len(optionalapi.All))
	for _, api := range optionalapi.All {
		rep := operatorstatus.OptionalAPI{Name: api.Name, API: api.String()}
		st := r.APIs.Status(api)
		switch {
		case !st.Served:
			rep.State, rep.Message = operatorstatus.NotInstalled, st.Reason+withoutIt(api, r.Settings)
		case !inUse.has(api):
			rep.State, rep.Message = operatorstatus.Installed, notes[api.CRD()]
		default:
			rep.State, rep.Message = use(api, r.Settings)
		}
		out = append(out, rep)
	}
	return out
}

// use says how the settings use a served API.
func use(api optionalapi.API, s Settings) (operatorstatus.State, string) {
	switch api {
	case optionalapi.ExternalSecrets:
		if s.ClusterSecretStore == "" {
			return operatorstatus.Installed, "not used: the operator has no --cluster-secret-store, so apps' external secrets wait for one"
		}
		return operatorstatus.InUse, "apps' external secrets come from ClusterSecretStore " + s.ClusterSecretStore
	case optionalapi.CertManager:
		if s.ClusterIssuer == "" {
			return operatorstatus.Installed, "not used: the operator has no --cluster-issuer"
		}
		return operatorstatus.InUse, "public apps get certificates from ClusterIssuer " + s.ClusterIssuer
	case optionalapi.Traefik:
		if s.IngressProvider != "traefik" {
			return operatorstatus.Installed, "public services get Ingresses (--ingress-provider " + s.IngressProvider + "); hosts that IngressRoutes serve are kept from other namespaces' apps"
		}
		return operatorstatus.InUse, "public services get IngressRoutes"
	}
	return operatorstatus.Installed, ""
}

// withoutIt says what apps miss while a configured API is not served.
func withoutIt(api optionalapi.API, s Settings) string {
	switch {
	case api == optionalapi.ExternalSecrets:
		return "; services with external secrets wait for it at zero replicas"
	case api == optionalapi.CertManager && s.ClusterIssuer != "":
		return "; public apps get no certificate from --cluster-issuer " + s.ClusterIssuer + " until it is installed"
	case api == optionalapi.Traefik && s.IngressProvider == "traefik":
		return "; public services get Ingresses until it is installed"
	}
	return ""
}

// setupOptionalAPIs prepares what follow needs and adds it to mgr, with the
// status Lease's reporter when r.StatusNamespace is set.
func (r *Reconciler) setupOptionalAPIs(mgr ctrl.Manager) error {
	r.scheme, r.mapper = mgr.GetScheme(), mgr.GetRESTMapper()
	r.ready = make(chan struct{})
	r.apiNotes = map[string]string{}
	if r.APIs == nil {
		w, err := optionalapi.NewWatcher(mgr.GetConfig(), mgr.GetHTTPClient(), optionalapi.All...)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := w.Load(ctx); err != nil {
			return err
		}
		if err := mgr.Add(w); err != nil {
			return err
		}
		r.APIs = w
	}
	var err error
	// The manager's cache cannot be told about these kinds before they
	// exist, so they get their own, selected and trimmed the same way. A
	// read of a kind whose informer follow stopped fails at once.
	r.optional, err = cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:           mgr.GetHTTPClient(),
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{schedv1.LabelManagedBy: schedv1.ManagedByValue}),
		// Each object by its own kind.
		DefaultTransform:            TrimOwned(schema.GroupVersionKind{}),
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return fmt.Errorf("cache for optional APIs: %w", err)
	}
	if err := mgr.Add(r.optional); err != nil {
		return err
	}
	if err := mgr.Add(apiFollower{r}); err != nil {
		return err
	}
	if r.StatusNamespace != "" {
		identity, err := os.Hostname()
		if err != nil {
			identity = "kubectl-sched-operator"
		}
		r.reporter = optionalapi.NewReporter(mgr.GetClient(), mgr.GetAPIReader(), r.StatusNamespace, identity, r.ready, r.report)
		if err := mgr.Add(r.reporter); err != nil {
			return err
		}
	}
	return nil
}
