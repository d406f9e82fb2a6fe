// Package scope limits the operator to the namespaces a label selector
// picks (--namespace-selector). Its Cache keeps each namespaced kind per
// selected namespace, as controller-runtime's DefaultNamespaces does, so
// objects elsewhere are neither sent to the operator nor held by it; and it
// follows the selection while the operator runs: a namespace that comes to
// match is listed and watched, its objects arriving as creates, and one
// that stops matching (or is deleted) is let go, its objects leaving as
// deletes.
//
// controller-runtime fixes DefaultNamespaces when the cache is built.
// Rebuilding the manager on every change would relist every namespace's
// objects, drop every work queue and hand the leader Lease over each time a
// tenant is created; this cache lists only the namespace that changed.
package scope

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Options say which namespaces the cache serves.
type Options struct {
	// Selector picks the namespaces by their labels.
	Selector labels.Selector
	// Always are served whatever their labels: the operator's own
	// namespace and the scheduler namespace, whose objects it reads.
	Always []string
}

// NewCache returns the manager's cache constructor for o
// (ctrl.Options.NewCache).
func NewCache(o Options) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		return New(cfg, opts, o)
	}
}

// Cache serves cluster-scoped kinds, and kinds whose ByObject names its
// own namespaces, from one cache of the whole cluster; every other
// namespaced kind from one cache per served namespace.
type Cache struct {
	cfg    *rest.Config
	opts   cache.Options
	scope  Options
	always map[string]bool

	// cluster holds cluster-scoped kinds, the Namespaces among them.
	cluster cache.Cache
	// perNamespace are the ByObject settings of the kinds cached per
	// namespace; fixed are the kinds whose ByObject names namespaces.
	perNamespace map[client.Object]cache.ByObject
	fixed        map[schema.GroupVersionKind]bool

	// mu guards what follows: changes to the served namespaces and to
	// the kinds and handlers registered are made under it, so that a
	// namespace taken up gets every kind, index and handler.
	mu         sync.RWMutex
	namespaces map[string]*namespace
	kinds      map[kindKey]*kind
	indexes    []fieldIndex
	ctx        context.Context
	// synced is closed once the namespaces selected at start are known.
	synced chan struct{}
}

// namespace is the cache of one served namespace.
type namespace struct {
	name   string
	cache  cache.Cache
	cancel context.CancelFunc
	done   chan struct{}
}

type fieldIndex struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// New builds the cache; Start runs it.
func New(cfg *rest.Config, opts cache.Options, o Options) (*Cache, error) {
	if opts.Scheme == nil || opts.Mapper == nil || opts.HTTPClient == nil {
		// The manager sets all three; sharing them keeps one connection
		// and one discovery for every namespace.
		return nil, errors.New("scope.New needs the manager's scheme, REST mapper and HTTP client")
	}
	if len(opts.DefaultNamespaces) > 0 {
		return nil, errors.New("scope.New chooses the namespaces itself: DefaultNamespaces must be empty")
	}
	if o.Selector == nil {
		return nil, errors.New("scope.New needs a namespace selector")
	}
	c := &Cache{
		cfg:          cfg,
		opts:         opts,
		scope:        o,
		always:       map[string]bool{},
		perNamespace: map[client.Object]cache.ByObject{},
		fixed:        map[schema.GroupVersionKind]bool{},
		namespaces:   map[string]*namespace{},
		kinds:        map[kindKey]*kind{},
		synced:       make(chan struct{}),
	}
	for _, ns := range o.Always {
		c.always[ns] = true
	}
	for obj, by := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, opts.Scheme)
		if err != nil {
			return nil, err
		}
		namespaced, err := apiutil.IsGVKNamespaced(gvk, opts.Mapper)
		if err != nil {
			return nil, fmt.Errorf("is %s namespaced: %w", gvk.Kind, err)
		}
		switch {
		case by.Namespaces != nil:
			c.fixed[gvk] = true
		case namespaced:
			c.perNamespace[obj] = by
		}
	}
	var err error
	if c.cluster, err = cache.New(cfg, opts); err != nil {
		return nil, err
	}
	return c, nil
}

// Selects reports whether the cache serves namespace ns. A terminating
// namespace is served until it is gone: its pods wait for the operator to
// release them.
func (c *Cache) Selects(ns *corev1.Namespace) bool {
	return c.always[ns.Name] || c.scope.Selector.Matches(labels.Set(ns.Labels))
}

// Namespaces lists the namespaces served now, sorted.
func (c *Cache) Namespaces() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.namespaces))
	for ns := range c.namespaces {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// Start follows the Namespaces and runs the caches until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.ctx != nil {
		c.mu.Unlock()
		return errors.New("the scoped cache was already started")
	}
	c.ctx = ctx
	for ns := range c.always {
		if err := c.addLocked(ns); err != nil {
			c.mu.Unlock()
			return err
		}
	}
	c.mu.Unlock()

	nsInformer, err := c.cluster.GetInformer(ctx, &corev1.Namespace{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watch Namespaces: %w", err)
	}
	reg, err := nsInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.follow(obj, false) },
		UpdateFunc: func(_, obj any) { c.follow(obj, false) },
		DeleteFunc: func(obj any) { c.follow(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("watch Namespaces: %w", err)
	}
	errs := make(chan error, 1)
	go func() { errs <- c.cluster.Start(ctx) }()
	known := make(chan struct{})
	go func() {
		if toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			close(known)
		}
	}()
	select {
	case err = <-errs:
	case <-known:
		close(c.synced)
		err = <-errs
	}

	c.mu.Lock()
	var stopped []*namespace
	for _, ns := range c.namespaces {
		ns.cancel()
		stopped = append(stopped, ns)
	}
	c.mu.Unlock()
	for _, ns := range stopped {
		<-ns.done
	}
	return err
}

// follow takes up or lets go of the namespace of a Namespace event.
func (c *Cache) follow(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	want := !deleted && c.Selects(ns)
	if c.always[ns.Name] {
		return
	}
	c.mu.Lock()
	_, have := c.namespaces[ns.Name]
	var gone *namespace
	switch {
	case want && !have:
		if err := c.addLocked(ns.Name); err != nil {
			log.FromContext(c.ctx).Error(err, "Cannot serve a namespace", "namespace", ns.Name)
		} else {
			log.FromContext(c.ctx).Info("Serving a namespace: it matches the namespace selector", "namespace", ns.Name)
		}
	case !want && have:
		gone = c.removeLocked(ns.Name)
	}
	c.mu.Unlock()
	if gone != nil {
		log.FromContext(c.ctx).Info("No longer serving a namespace: it no longer matches the namespace selector", "namespace", ns.Name, "deleted", deleted)
		c.letGo(gone)
	}
}

// addLocked starts the cache of namespace name with every kind, index and
// handler registered so far.
func (c *Cache) addLocked(name string) error {
	opts := c.opts
	opts.DefaultNamespaces = map[string]cache.Config{name: {}}
	opts.ByObject = c.perNamespace
	nc, err := cache.New(c.cfg, opts)
	if err != nil {
		return err
	}
	for _, idx := range c.indexes {
		if err := nc.IndexField(c.ctx, idx.obj, idx.field, idx.extract); err != nil {
			return err
		}
	}
	// Everything is attached before the cache starts, and recorded only
	// once all of it is: a failure leaves nothing running or half known.
	informers := map[kindKey]cache.Informer{}
	registrations := map[*registration]toolscache.ResourceEventHandlerRegistration{}
	for key, k := range c.kinds {
		inf, err := nc.GetInformer(c.ctx, k.newObject(), cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		for _, idx := range k.indexers {
			if err := inf.AddIndexers(idx); err != nil {
				return err
			}
		}
		for _, reg := range k.handlers {
			r, err := inf.AddEventHandlerWithOptions(reg.handler, reg.opts)
			if err != nil {
				return err
			}
			registrations[reg] = r
		}
		informers[key] = inf
	}
	for key, inf := range informers {
		c.kinds[key].informers[name] = inf
	}
	for reg, r := range registrations {
		reg.byNamespace[name] = r
	}
	ctx, cancel := context.WithCancel(c.ctx)
	ns := &namespace{name: name, cache: nc, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(ns.done)
		if err := nc.Start(ctx); err != nil {
			log.FromContext(ctx).Error(err, "The cache of a namespace stopped", "namespace", name)
		}
	}()
	c.namespaces[name] = ns
	return nil
}

// removeLocked stops serving namespace name: reads find nothing there from
// now on, and its informers no longer call the handlers.
func (c *Cache) removeLocked(name string) *namespace {
	ns := c.namespaces[name]
	delete(c.namespaces, name)
	for _, k := range c.kinds {
		inf := k.informers[name]
		delete(k.informers, name)
		for _, reg := range k.handlers {
			if r, ok := reg.byNamespace[name]; ok && inf != nil {
				_ = inf.RemoveEventHandler(r)
			}
			delete(reg.byNamespace, name)
		}
	}
	return ns
}

// letGo tells each handler that the objects of a namespace no longer
// served are gone, as a relist tells of objects deleted meanwhile, then
// stops its cache.
func (c *Cache) letGo(ns *namespace) {
	defer func() {
		ns.cancel()
		<-ns.done
	}()
	c.mu.RLock()
	type delivery struct {
		k        *kind
		handlers []toolscache.ResourceEventHandler
	}
	var deliveries []delivery
	for _, k := range c.kinds {
		d := delivery{k: k}
		for _, reg := range k.handlers {
			d.handlers = append(d.handlers, reg.handler)
		}
		deliveries = append(deliveries, d)
	}
	c.mu.RUnlock()
	for _, d := range deliveries {
		if len(d.handlers) == 0 {
			continue
		}
		list, err := d.k.newList(c.opts.Scheme)
		if err == nil {
			err = ns.cache.List(c.ctx, list, client.InNamespace(ns.name))
		}
		if err != nil {
			log.FromContext(c.ctx).Error(err, "Cannot tell the operator's controllers what left with a namespace", "namespace", ns.name, "kind", d.k.key.gvk.Kind)
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			for _, h := range d.handlers {
				h.OnDelete(o)
			}
			return nil
		})
	}
}

// WaitForCacheSync waits until the namespaces served at start are known
// and every cache has synced.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.synced:
	case <-ctx.Done():
		return false
	}
	if !c.cluster.WaitForCacheSync(ctx) {
		return false
	}
	for _, ns := range c.served() {
		if !ns.cache.WaitForCacheSync(ctx) {
			return false
		}
	}
	return true
}

func (c *Cache) served() []*namespace {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*namespace, 0, len(c.namespaces))
	for _, ns := range c.namespaces {
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b *namespace) int { return strings.Compare(a.name, b.name) })
	return out
}

// route says obj's kind (a list's items') and whether it is cached per
// namespace; the others are the cluster cache's.
func (c *Cache) route(obj runtime.Object) (schema.GroupVersionKind, bool, error) {
	gvk, err := apiutil.GVKForObject(obj, c.opts.Scheme)
	if err != nil {
		return gvk, false, err
	}
	if meta.IsListType(obj) {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if c.fixed[gvk] {
		return gvk, false, nil
	}
	namespaced, err := apiutil.IsGVKNamespaced(gvk, c.opts.Mapper)
	return gvk, namespaced, err
}

// Get reads from the cache of key's namespace; an object in a namespace
// not served is not found.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, per, err := c.route(obj)
	if err != nil || !per {
		return orCluster(err, func() error { return c.cluster.Get(ctx, key, obj, opts...) })
	}
	if _, err := c.kindOf(obj); err != nil {
		return err
	}
	ns := c.namespace(key.Namespace)
	if ns == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	return whenStarted(ctx, ns, func() error { return ns.cache.Get(ctx, key, obj, opts...) })
}

// List reads from the cache of the namespace asked, or of every namespace
// served; a namespace not served has nothing.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, per, err := c.route(list)
	if err != nil || !per {
		return orCluster(err, func() error { return c.cluster.List(ctx, list, opts...) })
	}
	if _, err := c.kindOf(itemOf(list, gvk, c.opts.Scheme)); err != nil {
		return err
	}
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if lo.Continue != "" {
		return errors.New("the cache cannot continue a list")
	}
	var namespaces []*namespace
	if lo.Namespace != "" {
		if ns := c.namespace(lo.Namespace); ns != nil {
			namespaces = append(namespaces, ns)
		}
	} else {
		namespaces = c.served()
	}
	var items []runtime.Object
	for _, ns := range namespaces {
		part := list.DeepCopyObject().(client.ObjectList)
		if err := whenStarted(ctx, ns, func() error { return ns.cache.List(ctx, part, opts...) }); err != nil {
			return err
		}
		objs, err := meta.ExtractList(part)
		if err != nil {
			return err
		}
		items = append(items, objs...)
	}
	return meta.SetList(list, items)
}

// orCluster is err, or else what the cluster cache does.
func orCluster(err error, cluster func() error) error {
	if err != nil {
		return err
	}
	return cluster()
}

func (c *Cache) namespace(name string) *namespace {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.namespaces[name]
}

// whenStarted runs read, waiting for the namespace's cache to start when
// it was taken up a moment ago.
func whenStarted(ctx context.Context, ns *namespace, read func() error) error {
	err := read()
	var notStarted *cache.ErrCacheNotStarted
	if !errors.As(err, &notStarted) {
		return err
	}
	if !ns.cache.WaitForCacheSync(ctx) {
		return err
	}
	return read()
}

// GetInformer returns the informer of obj's kind: for a kind cached per
// namespace, one that spans every namespace served, now and later.
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if _, per, err := c.route(obj); err != nil || !per {
		if err != nil {
			return nil, err
		}
		return c.cluster.GetInformer(ctx, obj, opts...)
	}
	k, err := c.kindOf(obj)
	if err != nil {
		return nil, err
	}
	var o cache.InformerGetOptions
	for _, opt := range opts {
		opt(&o)
	}
	if (o.BlockUntilSynced == nil || *o.BlockUntilSynced) && c.started() {
		if !toolscache.WaitForCacheSync(ctx.Done(), k.HasSynced) {
			return nil, apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %T informers to sync", obj), 0)
		}
	}
	return k, nil
}

// GetInformerForKind is GetInformer for a kind of the scheme.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := c.opts.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	co, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", gvk)
	}
	return c.GetInformer(ctx, co, opts...)
}

// RemoveInformer stops the informers of obj's kind.
func (c *Cache) RemoveInformer(ctx context.Context, obj client.Object) error {
	gvk, per, err := c.route(obj)
	if err != nil || !per {
		return orCluster(err, func() error { return c.cluster.RemoveInformer(ctx, obj) })
	}
	key := keyOf(gvk, obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.kinds, key)
	for _, ns := range c.namespaces {
		if err := ns.cache.RemoveInformer(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// IndexField adds the index in every namespace's cache, now and later.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if _, per, err := c.route(obj); err != nil || !per {
		return orCluster(err, func() error { return c.cluster.IndexField(ctx, obj, field, extract) })
	}
	if _, err := c.kindOf(obj); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.indexes = append(c.indexes, fieldIndex{obj: obj.DeepCopyObject().(client.Object), field: field, extract: extract})
	for _, ns := range c.namespaces {
		if err := ns.cache.IndexField(ctx, obj, field, extract); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cache) started() bool {
	select {
	case <-c.synced:
		return true
	default:
		return false
	}
}

// kindOf returns obj's kind, registering it in every namespace served
// when it is new, so that every namespace taken up later caches it too.
func (c *Cache) kindOf(obj client.Object) (*kind, error) {
	gvk, err := apiutil.GVKForObject(obj, c.opts.Scheme)
	if err != nil {
		return nil, err
	}
	key := keyOf(gvk, obj)
	c.mu.RLock()
	k, ok := c.kinds[key]
	c.mu.RUnlock()
	if ok {
		return k, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.kinds[key]; ok {
		return k, nil
	}
	k = &kind{c: c, key: key, template: obj.DeepCopyObject().(client.Object), informers: map[string]cache.Informer{}}
	k.template.GetObjectKind().SetGroupVersionKind(gvk)
	for name, ns := range c.namespaces {
		inf, err := ns.cache.GetInformer(c.ctxOrBackground(), k.newObject(), cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		k.informers[name] = inf
	}
	c.kinds[key] = k
	return k, nil
}

func (c *Cache) ctxOrBackground() context.Context {
	if c.ctx != nil {
		return c.ctx
	}
	return context.Background()
}

// kindKey tells kinds apart by GVK and by how they are read: typed,
// unstructured or metadata only, each its own informer.
type kindKey struct {
	gvk  schema.GroupVersionKind
	form string
}

func keyOf(gvk schema.GroupVersionKind, obj runtime.Object) kindKey {
	switch obj.(type) {
	case *unstructured.Unstructured, *unstructured.UnstructuredList:
		return kindKey{gvk, "unstructured"}
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return kindKey{gvk, "metadata"}
	}
	return kindKey{gvk, "typed"}
}

// itemOf is an object of a list's kind, in the list's form.
func itemOf(list client.ObjectList, gvk schema.GroupVersionKind, scheme *runtime.Scheme) client.Object {
	switch list.(type) {
	case *unstructured.UnstructuredList:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	case *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m
	}
	if obj, err := scheme.New(gvk); err == nil {
		if co, ok := obj.(client.Object); ok {
			return co
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}
