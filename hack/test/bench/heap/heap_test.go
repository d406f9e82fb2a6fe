package heap

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

const (
	apps      = 1000  // two-service UserDeployments
	unrelated = 10000 // Deployments, and as many Secrets
	// Objects are spread over this many namespaces of each sort.
	namespaces = 10
	// workers create objects at once.
	workers = 10
)

var sim *testenv.Sim

// TestMain starts the simulated cluster only when benchmarks run, so that
// `go test ./...` pays nothing for this package. The untainted nodes take
// 1,000 pods each, room for the 2,000 pods of the apps.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	if os.Getenv("HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 4096 // finer than the default 512 KiB
	}
	// The operator's main sets a logger at once; without one,
	// controller-runtime keeps every logger made in its first 30 seconds.
	ctrl.SetLogger(logr.Discard())
	nodes := cluster.DefaultNodes()
	for i := range nodes {
		nodes[i].Pods = 1000
	}
	var err error
	sim, err = testenv.StartSimWith(cluster.Options{Nodes: nodes, ExtraControllerManagerArgs: []string{"--kube-api-qps=300", "--kube-api-burst=600"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = sim.Stop(code != 0)
	os.Exit(code)
}

// BenchmarkOperatorHeap measures the heap of the whole operator (every
// controller, as shipped, run in this process with its generated RBAC):
//
//  1. started and synced on the empty cluster (the baseline);
//  2. with 1,000 UserDeployments of two services each, all Running. Each
//     app is the web-app template's shape with one replica per service and
//     a config entry: a public web service and an internal API, so the
//     operator owns 2 Deployments, 2 Services, a ConfigMap, an Ingress and a
//     NetworkPolicy, and caches the 2 pods. The per-object figure divides
//     the growth over the baseline by the cached owned objects: every object
//     carrying the managed-by label the caches select on (Deployments,
//     Services, ConfigMaps, Ingresses, NetworkPolicies, pods), counted from
//     the API server, plus the UserDeployments themselves (target <= 2 KiB);
//  3. after 10,000 unrelated Deployments (replicas 0, so no pods) and
//     10,000 unrelated Secrets (300 bytes of data each) in other namespaces:
//     the growth over step 2 (target < 5 MiB).
//
// Heap is runtime.MemStats.HeapAlloc right after runtime.GC(), so live
// bytes: the median of five samples a second apart, taken once the
// operator has gone five seconds without finishing a reconcile, with nothing
// queued. The test process holds nothing else that grows with the cluster:
// each object is built just before it is created, and counts are read as
// metadata only.
//
//	go test ./hack/test/bench/heap -run '^$' -bench . -benchtime 1x -timeout 30m
func BenchmarkOperatorHeap(b *testing.B) {
	ctx := context.Background()
	cfg := rest.CopyConfig(sim.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	stop, opts, err := testenv.StartOperator(ctx, sim.Config, func(o *app.Options) {
		o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst = 1000, 2000
		o.Settings.MaxConcurrentReconciles = 20
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	}()
	op := operator{"http://" + opts.MetricsAddr, "http://" + opts.ProbeAddr}
	poll(b, "the operator's caches to sync", time.Minute, op.ready)

	// One round per call whatever b.N is: each step keeps the objects of
	// the one before. A second call (-benchtime above 1x) measures again on
	// top of the first one's objects, in new namespaces.
	run := time.Now().UnixNano() % 100000
	appNS := makeNamespaces(b, c, fmt.Sprintf("heap-apps-%d", run))
	otherNS := makeNamespaces(b, c, fmt.Sprintf("heap-unrelated-%d", run))
	op.settle(b)
	before, _ := countCached(b, c)
	base := heap(b, "empty")

	start := time.Now()
	create(b, c, apps, func(i int) client.Object { return userDeployment(i, appNS[i%namespaces]) })
	poll(b, fmt.Sprintf("%d UserDeployments to be Running", apps), 20*time.Minute, func(ctx context.Context) error {
		n, err := running(ctx, c)
		if err == nil && n < apps {
			err = fmt.Errorf("%d of %d Running", n, apps)
		}
		return err
	})
	fmt.Printf("%d UserDeployments Running in %s\n", apps, time.Since(start).Round(time.Second))
	op.settle(b)
	cached, byKind := countCached(b, c)
	cached -= before
	withApps := heap(b, "apps")

	start = time.Now()
	create(b, c, unrelated, func(i int) client.Object { return unrelatedDeployment(i, otherNS[i%namespaces]) })
	create(b, c, unrelated, func(i int) client.Object { return unrelatedSecret(i, otherNS[i%namespaces]) })
	fmt.Printf("%d unrelated Deployments and %d Secrets created in %s\n", unrelated, unrelated, time.Since(start).Round(time.Second))
	op.settle(b)
	if again, _ := countCached(b, c); again-before != cached {
		b.Fatalf("cached owned objects changed from %d to %d while adding unrelated ones", cached, again)
	}
	withUnrelated := heap(b, "unrelated")

	perObject := float64(int64(withApps.alloc)-int64(base.alloc)) / float64(cached)
	growth := float64(int64(withUnrelated.alloc)-int64(withApps.alloc)) / (1 << 20)
	fmt.Printf("cached owned objects: %d new (now %s)\n", cached, byKind)
	fmt.Printf("live heap after GC, HeapAlloc (HeapInuse), median of 5 samples:\n")
	fmt.Printf("  operator synced, no apps:         %6.1f MiB (%.1f)\n", mib(base.alloc), mib(base.inuse))
	fmt.Printf("  with %d apps Running:           %6.1f MiB (%.1f)\n", apps, mib(withApps.alloc), mib(withApps.inuse))
	fmt.Printf("  and %d unrelated Deploys+Secrets: %6.1f MiB (%.1f)\n", unrelated, mib(withUnrelated.alloc), mib(withUnrelated.inuse))
	fmt.Printf("per cached owned object: %.2f KiB (target <= 2 KiB)\n", perObject/1024)
	fmt.Printf("growth from unrelated objects: %.2f MiB (target < 5 MiB)\n", growth)
	b.ReportMetric(float64(cached), "cached-objects")
	b.ReportMetric(perObject/1024, "KiB/cached-object")
	b.ReportMetric(growth, "MiB-unrelated-growth")
	b.ReportMetric(mib(withUnrelated.alloc), "MiB-heap")
}

// userDeployment is the web-app template's shape, one replica per service.
func userDeployment(i int, ns string) client.Object {
	name := fmt.Sprintf("app-%04d", i)
	return MakeUserDeployment(name, ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
		Service("api", "ghcr.io/example/shop-api:1.4.0", 8080, schedv1.ExposureInternal).
		EditService("web", func(s *schedv1.ServiceSpec) {
			s.Env = []schedv1.EnvVar{{Name: "API_URL", Value: "http://" + name + "-api:8080"}}
		}).
		Config("LOG_LEVEL", "info").
		Obj()
}

func unrelatedDeployment(i int, ns string) client.Object {
	labels := map[string]string{"app": fmt.Sprintf("other-%05d", i)}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%05d", i), Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "nginx:1.27",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				}}},
			},
		},
	}
}

func unrelatedSecret(i int, ns string) client.Object {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%05d", i), Namespace: ns, Labels: map[string]string{"app": fmt.Sprintf("other-%05d", i)}},
		Data: map[string][]byte{
			"username": []byte(fmt.Sprintf("user-%05d", i)),
			"password": []byte(strings.Repeat(strconv.Itoa(i%10), 280)),
		},
	}
}

func makeNamespaces(b *testing.B, c client.Client, prefix string) []string {
	b.Helper()
	out := make([]string, namespaces)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
		if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: out[i]}}); err != nil {
			b.Fatal(err)
		}
	}
	poll(b, "the default ServiceAccounts", time.Minute, func(ctx context.Context) error {
		for _, ns := range out {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{}); err != nil {
				return err
			}
		}
		return nil
	})
	return out
}

// create makes n objects with a few workers, building each when it is
// sent, so that the test holds none of them afterwards.
func create(b *testing.B, c client.Client, n int, obj func(int) client.Object) {
	b.Helper()
	if err := testenv.ForEach(workers, n, func(i int) error { return c.Create(context.Background(), obj(i)) }); err != nil {
		b.Fatal(err)
	}
}

func running(ctx context.Context, c client.Client) (int, error) {
	var list schedv1.UserDeploymentList
	if err := c.List(ctx, &list); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		ud := &list.Items[i]
		if ud.Status.ObservedGeneration == ud.Generation && ud.Status.Phase == schedv1.UserDeploymentRunning {
			n++
		}
	}
	return n, nil
}

// cachedKinds are the kinds the operator caches, by the list kind to count
// them; the UserDeployments are not label-selected.
var cachedKinds = []struct {
	name, apiVersion, kind string
	selected               bool
}{
	{"UserDeployments", schedv1.GroupVersion.String(), "UserDeploymentList", false},
	{"Deployments", "apps/v1", "DeploymentList", true},
	{"Services", "v1", "ServiceList", true},
	{"ConfigMaps", "v1", "ConfigMapList", true},
	{"Ingresses", "networking.k8s.io/v1", "IngressList", true},
	{"NetworkPolicies", "networking.k8s.io/v1", "NetworkPolicyList", true},
	{"pods", "v1", "PodList", true},
	{"Secrets", "v1", "SecretList", true},
	{"Jobs", "batch/v1", "JobList", true},
	{"DaemonSets", "apps/v1", "DaemonSetList", true},
}

// countCached counts, from the API server and as metadata only, the
// objects the operator's caches hold because of the apps.
func countCached(b *testing.B, c client.Client) (int, string) {
	b.Helper()
	total := 0
	var parts []string
	for _, k := range cachedKinds {
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: k.apiVersion, Kind: k.kind}}
		var opts []client.ListOption
		if k.selected {
			opts = append(opts, client.MatchingLabels{schedv1.LabelManagedBy: schedv1.ManagedByValue})
		}
		if err := c.List(context.Background(), list, opts...); err != nil {
			b.Fatal(err)
		}
		if n := len(list.Items); n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%d %s", n, k.name))
		}
	}
	return total, strings.Join(parts, ", ")
}

type heapSample struct{ alloc, inuse uint64 }

// heap returns the median of five samples of the live heap, a second apart.
// With $HEAP_PROFILE set, it also writes a heap profile to
// $HEAP_PROFILE-stage.pprof for `go tool pprof -sample_index=inuse_space`.
func heap(b *testing.B, stage string) heapSample {
	b.Helper()
	if prefix := os.Getenv("HEAP_PROFILE"); prefix != "" {
		runtime.GC()
		f, err := os.Create(prefix + "-" + stage + ".pprof")
		if err != nil {
			b.Fatal(err)
		}
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	var allocs, inuses []uint64
	for i := range 5 {
		if i > 0 {
			time.Sleep(time.Second)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		allocs = append(allocs, ms.HeapAlloc)
		inuses = append(inuses, ms.HeapInuse)
	}
	slices.Sort(allocs)
	slices.Sort(inuses)
	fmt.Printf("heap samples (HeapAlloc, MiB): %.1f .. %.1f\n", mib(allocs[0]), mib(allocs[4]))
	return heapSample{allocs[2], inuses[2]}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// operator reads the running operator's probes and metrics.
type operator struct{ metrics, probes string }

func (o operator) ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.probes+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	return nil
}

// settle waits until the operator has finished no reconcile and queued
// nothing for five seconds.
func (o operator) settle(b *testing.B) {
	b.Helper()
	last, quiet := -1.0, 0
	poll(b, "the operator to settle", 10*time.Minute, func(ctx context.Context) error {
		total, depth, err := o.reconciles(ctx)
		if err != nil {
			return err
		}
		if total == last && depth == 0 {
			quiet++
		} else {
			quiet = 0
		}
		last = total
		if quiet < 5 {
			return fmt.Errorf("%.0f reconciles so far, %.0f queued", total, depth)
		}
		return nil
	})
}

// reconciles sums the finished reconciles and the queue depths of every
// controller from the metrics endpoint.
func (o operator) reconciles(ctx context.Context) (total, depth float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.metrics+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		var dst *float64
		switch {
		case strings.HasPrefix(line, "controller_runtime_reconcile_total{"):
			dst = &total
		case strings.HasPrefix(line, "workqueue_depth{"):
			dst = &depth
		default:
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("metrics line %q: %w", line, err)
		}
		*dst += v
	}
	return total, depth, sc.Err()
}

// poll calls cond every second until it returns nil.
func poll(b *testing.B, what string, timeout time.Duration, cond func(context.Context) error) {
	b.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		b.Fatalf("waiting for %s: %v", what, last)
	}
}
