package optionalapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	crdinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Status says whether the cluster serves an API.
type Status struct {
	Served bool
	// Reason says why it is not served.
	Reason string
	// Changed is closed when the status changes; read Status again then.
	Changed <-chan struct{}
}

// Watcher follows the CRDs of some optional APIs, each with its own watch
// selected by name, so the operator reads no other CRD (and its RBAC names
// these). Load reads them once, before the manager starts, so controllers
// start with the right set; Start keeps it current. It runs on every
// replica, so a standby that takes over knows the set already.
type Watcher struct {
	client apiextensionsclient.Interface
	apis   []API

	mu     sync.Mutex
	status map[string]*state // by CRD name
}

type state struct {
	served  bool
	reason  string
	changed chan struct{}
}

// NewWatcher follows apis with cfg's credentials.
func NewWatcher(cfg *rest.Config, httpClient *http.Client, apis ...API) (*Watcher, error) {
	c, err := apiextensionsclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("client for CustomResourceDefinitions: %w", err)
	}
	w := &Watcher{client: c, apis: apis, status: map[string]*state{}}
	for _, a := range apis {
		w.status[a.CRD()] = &state{reason: notInstalled(a), changed: make(chan struct{})}
	}
	return w, nil
}

// Load reads each API's CRD once.
func (w *Watcher) Load(ctx context.Context) error {
	for _, a := range w.apis {
		crd, err := w.client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, a.CRD(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			crd = nil
		case err != nil:
			return fmt.Errorf("read CustomResourceDefinition %s (the operator's ClusterRole must allow get on it; re-run kubectl sched install): %w", a.CRD(), err)
		}
		served, reason := StatusOf(a, crd)
		w.set(ctx, a, served, reason)
	}
	return nil
}

// Status is the API's status as last seen.
func (w *Watcher) Status(a API) Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.status[a.CRD()]
	if !ok {
		// Not followed: never served, never changes.
		return Status{Reason: notInstalled(a)}
	}
	return Status{Served: s.served, Reason: s.reason, Changed: s.changed}
}

// set records a status and wakes whoever waits on the previous one, when
// it changed.
func (w *Watcher) set(ctx context.Context, a API, served bool, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.status[a.CRD()]
	if s.served == served && s.reason == reason {
		return
	}
	if served != s.served {
		log.FromContext(ctx).Info("Optional API changed", "api", a.String(), "served", served, "reason", reason)
	}
	close(s.changed)
	w.status[a.CRD()] = &state{served: served, reason: reason, changed: make(chan struct{})}
}

// NeedLeaderElection is false: every replica follows the CRDs.
func (w *Watcher) NeedLeaderElection() bool { return false }

// Start watches the CRDs until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("optional-apis"))
	wake := make(chan struct{}, 1)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	onEvent := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	}
	informers := make([]toolscache.SharedIndexInformer, len(w.apis))
	synced := make([]toolscache.InformerSynced, len(w.apis))
	for i, a := range w.apis {
		byName := fields.OneTermEqualSelector("metadata.name", a.CRD()).String()
		inf := crdinformers.NewFilteredCustomResourceDefinitionInformer(w.client, 0, toolscache.Indexers{},
			func(o *metav1.ListOptions) { o.FieldSelector = byName })
		if err := inf.SetTransform(trimCRD); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(onEvent); err != nil {
			return err
		}
		informers[i], synced[i] = inf, inf.HasSynced
		go inf.RunWithContext(ctx)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // stopping
	}
	for {
		for i, a := range w.apis {
			var crd *apiextensionsv1.CustomResourceDefinition
			if items := informers[i].GetStore().List(); len(items) > 0 {
				crd, _ = items[0].(*apiextensionsv1.CustomResourceDefinition)
			}
			served, reason := StatusOf(a, crd)
			w.set(ctx, a, served, reason)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
	}
}

func notInstalled(a API) string {
	return fmt.Sprintf("no CustomResourceDefinition %s", a.CRD())
}

// StatusOf says whether crd (nil when there is none) serves a, and if not
// why. A CRD being deleted no longer counts: its objects are going.
func StatusOf(a API, crd *apiextensionsv1.CustomResourceDefinition) (served bool, reason string) {
	if crd == nil {
		return false, notInstalled(a)
	}
	if crd.DeletionTimestamp != nil {
		return false, fmt.Sprintf("CustomResourceDefinition %s is being deleted", a.CRD())
	}
	var versions []string
	servesOurs := false
	for _, v := range crd.Spec.Versions {
		if v.Served {
			versions = append(versions, v.Name)
			servesOurs = servesOurs || v.Name == a.GVK.Version
		}
	}
	if !servesOurs {
		serves := "no version"
		if len(versions) > 0 {
			serves = strings.Join(versions, ", ")
		}
		return false, fmt.Sprintf("CustomResourceDefinition %s does not serve %s (it serves %s); the operator needs %s", a.CRD(), a.GVK.Version, serves, a)
	}
	established := slices.IndexFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	}) >= 0
	if !established {
		return false, fmt.Sprintf("CustomResourceDefinition %s is not established yet", a.CRD())
	}
	return true, ""
}

// trimCRD keeps of a CRD what StatusOf reads: a large CRD (schemas of
// several versions) costs the cache a few hundred bytes.
func trimCRD(obj any) (any, error) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return obj, nil
	}
	out := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{
		Name: crd.Name, UID: crd.UID, ResourceVersion: crd.ResourceVersion, DeletionTimestamp: crd.DeletionTimestamp,
	}}
	out.Spec.Group = crd.Spec.Group
	for _, v := range crd.Spec.Versions {
		out.Spec.Versions = append(out.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served})
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			out.Status.Conditions = append(out.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: c.Type, Status: c.Status})
		}
	}
	return out, nil
}
