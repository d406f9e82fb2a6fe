package tierbounds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/tenant"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	// objectCap is the most one object can hold: etcd's request limit
	// (--max-request-bytes, 1.5 MiB by default), past which the API
	// server cannot store it.
	objectCap = 3 * mib / 2
	// smallCap bounds the objects whose content is names, ports and
	// addresses from bounded fields (a Service, an EndpointSlice of at
	// most 100 endpoints, an Ingress of an app's 16 services' paths).
	smallCap = 64 * kib
	// servicesPerApp is the API's bound on an app's services.
	servicesPerApp = 16
	// secretsPerApp is the API's bound on an app's secret references
	// (each external one an ExternalSecret).
	secretsPerApp = 32
	// podsPerTask: the operator keeps a task's latest pod and the latest
	// failed attempt before it.
	podsPerTask = 2
)

// kindBound is how many objects of a kind a namespace can hold, and how
// large each can be.
type kindBound struct {
	count int64
	each  int64
	why   string
}

// boundOf is the bound on what a namespace of tier can make the cluster
// store, by resource (group resource; "deployments.apps+statefulsets.apps"
// for an app's workloads): README, Security model, "What a tenant can make
// the cluster store". Events are not in it: they expire after the API
// server's --event-ttl. Claims (the members', apps' and workflows'
// workspaces') count as objects here; their volumes' bytes are the
// storage's, not etcd's, and requests.storage bounds them
// (TestWorkspacesCountAgainstTheTier).
func boundOf(tier tenant.Tier) map[string]kindBound {
	q := func(name string) int64 {
		v := tier.Quota[corev1.ResourceName(name)]
		return v.Value()
	}
	tasks, apps := q("count/agenttasks.sched.kubectl-sched.dev"), q("count/userdeployments.sched.kubectl-sched.dev")
	return map[string]kindBound{
		"agenttasks.sched.kubectl-sched.dev":        {tasks, objectCap, "count/agenttasks (step tasks too)"},
		"jobs.batch":                                {tasks, objectCap, "one per task"},
		"pods":                                      {podsPerTask*tasks + q("pods") + apps*servicesPerApp, objectCap, "2 per task, the pods quota's running ones, 1 failed per app service"},
		"workflows.sched.kubectl-sched.dev":         {q("count/workflows.sched.kubectl-sched.dev"), objectCap, "count/workflows (schedules' runs too)"},
		"cronworkflows.sched.kubectl-sched.dev":     {q("count/cronworkflows.sched.kubectl-sched.dev"), objectCap, "count/cronworkflows"},
		"workflowtemplates.sched.kubectl-sched.dev": {q("count/workflowtemplates.sched.kubectl-sched.dev"), objectCap, "count/workflowtemplates"},
		"userdeployments.sched.kubectl-sched.dev":   {apps, objectCap, "count/userdeployments"},
		"secrets":                                {q("count/secrets"), objectCap, "count/secrets"},
		"configmaps":                             {q("count/configmaps"), objectCap, "count/configmaps"},
		"controllerrevisions.apps":               {q("count/controllerrevisions.apps"), objectCap, "count/controllerrevisions.apps"},
		"replicasets.apps":                       {q("count/replicasets.apps"), objectCap, "count/replicasets.apps"},
		"deployments.apps+statefulsets.apps":     {apps * servicesPerApp, objectCap, "one per app service"},
		"services":                               {apps * servicesPerApp, smallCap, "one per app service"},
		"endpoints":                              {apps * servicesPerApp, smallCap, "one per Service"},
		"endpointslices.discovery.k8s.io":        {2 * apps * servicesPerApp, smallCap, "one per Service and address family"},
		"ingresses.networking.k8s.io":            {apps, smallCap, "one per app"},
		"networkpolicies.networking.k8s.io":      {apps + 1, smallCap, "one per app, the tenant's"},
		"persistentvolumeclaims":                 {q("persistentvolumeclaims"), smallCap, "persistentvolumeclaims"},
		"externalsecrets.external-secrets.io":    {apps * secretsPerApp, smallCap, "one per external secret of an app"},
		"certificates.cert-manager.io":           {apps, smallCap, "one per public app"},
		"certificaterequests.cert-manager.io":    {2 * apps, smallCap, "revisionHistoryLimit 1, and one being issued"},
		"ingressroutes.traefik.io":               {apps, smallCap, "one per public app"},
		"resourcequotas":                         {2, smallCap, "the tier's"},
		"limitranges":                            {1, smallCap, "the tier's"},
		"rolebindings.rbac.authorization.k8s.io": {2, smallCap, "the members' and the operator's to read its tasks' pods' logs"},
		"serviceaccounts":                        {1, smallCap, "default"},
	}
}

// total is a bound's sum.
func total(b map[string]kindBound) int64 {
	var n int64
	for _, k := range b {
		n += k.count * k.each
	}
	return n
}

// shippedTiers reads config/manager/tiers.yaml.
func shippedTiers(t *testing.T) map[string]tenant.Tier {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "tiers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal(data, cm); err != nil {
		t.Fatal(err)
	}
	tiers, bad := tenant.ParseTiers(cm)
	if len(bad) > 0 {
		t.Fatalf("shipped tiers that do not parse: %v", bad)
	}
	return tiers
}

// stored is what a namespace holds of one kind, as read back from the API
// server.
type stored struct {
	count int64
	bytes int64
	names []string
}

// storedIn reads every object of every namespaced kind in ns (its JSON as
// the API server returns it, status and managed fields included, an upper
// bound of what etcd keeps in protobuf), by group resource.
func storedIn(ctx context.Context, t *testing.T, ns string) map[string]*stored {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(sim.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(sim.Config)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatal(err)
	}
	out := map[string]*stored{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			// Subresources, kinds that cannot be listed, and the events
			// API's view of the core events.
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || gv.Group == "events.k8s.io" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list %s: %v", r.Name, err)
			}
			if len(items.Items) == 0 {
				continue
			}
			key := schema.GroupResource{Group: gv.Group, Resource: r.Name}.String()
			s := &stored{}
			for _, it := range items.Items {
				raw, err := json.Marshal(it.Object)
				if err != nil {
					t.Fatal(err)
				}
				s.count++
				s.bytes += int64(len(raw))
				s.names = append(s.names, it.GetName())
			}
			out[key] = s
		}
	}
	// An app's workloads are bounded together.
	w := &stored{}
	for _, k := range []string{"deployments.apps", "statefulsets.apps"} {
		if s := out[k]; s != nil {
			w.count, w.bytes, w.names = w.count+s.count, w.bytes+s.bytes, append(w.names, s.names...)
			delete(out, k)
		}
	}
	if w.count > 0 {
		out["deployments.apps+statefulsets.apps"] = w
	}
	return out
}

// filler is a value of n bytes.
func filler(n int, c byte) string { return strings.Repeat(string(c), n) }

// bigTask is a task spec of about 200 KiB (32 args and 16 env values of
// 4 KiB) whose simulated pod runs a second and exits with code.
func bigTask(code int, retries int32) schedv1.AgentTaskSpec {
	spec := schedv1.AgentTaskSpec{Image: "registry.example/agent:1", PodMetadata: &schedv1.PodMetadata{Annotations: map[string]string{
		cluster.AnnotationRunSeconds: "1", cluster.AnnotationExitCode: fmt.Sprint(code), cluster.AnnotationTerminationMessage: "k=v",
	}}}
	for i := range 32 {
		spec.Args = append(spec.Args, filler(4096, byte('a'+i%26)))
	}
	for i := range 16 {
		spec.Env = append(spec.Env, schedv1.EnvVar{Name: fmt.Sprintf("E%02d", i), Value: filler(4096, 'e')})
	}
	if retries > 0 {
		spec.Retry = &schedv1.RetryPolicy{Limit: retries}
	}
	// Small enough that the pods quota, not CPU, bounds how many run.
	spec.Resources = schedv1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
	}}
	return spec
}

// bigApp is an app of four internal services (the first running, with a
// volume when volume is set) and a config of about 940 KiB, rev its first
// letter: each rev is a new revision. Four services, not the API's 16:
// each change rolls every service, and the bound counts 16 per app.
func bigApp(ns, name string, rev byte, volume bool) *schedv1.UserDeployment {
	w := MakeUserDeployment(name, ns)
	for i := range 4 {
		svc := fmt.Sprintf("s%02d", i)
		w.Service(svc, "registry.example/web:1", 8080, schedv1.ExposureInternal)
		if i > 0 {
			w.Replicas(svc, 0)
		}
	}
	if volume {
		w.EditService("s00", func(s *schedv1.ServiceSpec) {
			s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("1Gi"), MountPath: "/data"}}
		})
	}
	for i := range 117 {
		w.Config(fmt.Sprintf("K%03d", i), filler(8192, rev))
	}
	return w.Obj()
}

// refusedByQuota creates obj as c (a dry run) and wants the tier's quota
// to refuse it. Polled: the quota controller's recount from a cache that
// has not seen the latest creates may count fewer for a moment, and
// admission judges by what it counted.
func refusedByQuota(t *testing.T, c client.Client, obj client.Object, resource string) {
	t.Helper()
	poll(t, pollTimeout, fmt.Sprintf("%T %s refused by quota %s", obj, obj.GetName(), schedv1.TierObjectName), func(ctx context.Context) error {
		err := c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: "+schedv1.TierObjectName) || !strings.Contains(err.Error(), resource) {
			q := &corev1.ResourceQuota{}
			_ = sim.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: schedv1.TierObjectName}, q)
			r := corev1.ResourceName(resource)
			return fmt.Errorf("err = %v, want it refused for %s (used %v of %v)", err, resource, ptr.To(q.Status.Used[r]), ptr.To(q.Status.Hard[r]))
		}
		return nil
	})
}

// TestFreeTierStoresAtMostItsBound fills a free-tier namespace, as its
// member, every way the member can: the tier's count of Secrets at 1 MiB;
// its two apps (of four services: the bound counts 16) with a config of
// 940 KiB, changed three times (each change a revision, a rollout, a new
// ReplicaSet per service), one service with a volume (a StatefulSet, its
// claim and revisions); its five workflows and two schedules; tasks up to
// its count, three of them failing every attempt of three. The quota
// refuses one more of each kind a member creates. What the namespace then
// holds, read back from the API server kind by kind (what the operator and
// Kubernetes made for the member included), stays within the tier's bound,
// kind by kind and in all (boundOf). Without the tier's count of Secrets
// (the eleventh passes), its bound on an app's revisions (four kept), the
// apps' workloads keeping no history (a ReplicaSet per change) and the
// pruning of a task's earlier attempts (three pods each), it does not.
func TestFreeTierStoresAtMostItsBound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const ns = "fill-free"
	bound := boundOf(shippedTiers(t)["free"])
	start := time.Now()
	mallory := testenv.Tenant(t, sim, ns, "free", "mallory", 2*time.Minute)
	t.Logf("tenant %s made in %s", ns, time.Since(start).Round(time.Millisecond))

	// Secrets: the tier's count, each of 1 MiB of data (the API's limit).
	for i := range 10 {
		createAs(t, mallory, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("blob-%d", i), Namespace: ns},
			Data: map[string][]byte{"blob": []byte(filler(mib-64, 's'))}})
	}
	refusedByQuota(t, mallory, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "blob-10", Namespace: ns}}, "count/secrets")

	// Two apps, each changed three times while the rest is made: four
	// revisions each, one more than the tier keeps.
	apps := []string{"app-a", "app-b"}
	var wg sync.WaitGroup
	errs := make(chan error, len(apps))
	for i, name := range apps {
		createAs(t, mallory, bigApp(ns, name, 'a', i == 1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- changeConfig(ctx, mallory, ns, name, 3)
		}()
	}
	refusedByQuota(t, mallory, MakeUserDeployment("app-c", ns).Service("web", "registry.example/web:1", 8080, schedv1.ExposureInternal).Obj(), "count/userdeployments")
	// Nor may an app keep more revisions than the tier.
	more := &schedv1.UserDeployment{}
	if err := mallory.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-a"}, more); err != nil {
		t.Fatal(err)
	}
	more.Spec.RevisionHistoryLimit = ptr.To[int32](4)
	if err := mallory.Update(ctx, more, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "spec.revisionHistoryLimit 4: tier free keeps at most 3 revisions of an app") {
		t.Errorf("revisionHistoryLimit 4: err = %v, want it refused by the tier", err)
	}

	// Tasks up to the count, in waves the pods quota (10, two of them the
	// apps') lets run at once: five workflows' steps and three tasks
	// that fail every attempt of three, then twelve that succeed, five at
	// a time.
	for i := range 5 {
		createAs(t, mallory, MakeWorkflow(fmt.Sprintf("wf-%d", i), ns).StepTask("step", bigTask(0, 0)).Obj())
	}
	for i := range 2 {
		createAs(t, mallory, MakeCronWorkflow(fmt.Sprintf("cron-%d", i), ns, "0 0 1 1 *").StepTask("step", bigTask(0, 0)).Obj())
	}
	for i := range 3 {
		createAs(t, mallory, MakeAgentTask(fmt.Sprintf("failing-%d", i), ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = bigTask(1, 2) }).Obj())
	}
	refusedByQuota(t, mallory, MakeWorkflow("wf-5", ns).Step("step", "busybox").Obj(), "count/workflows")
	refusedByQuota(t, mallory, MakeCronWorkflow("cron-2", ns, "0 0 1 1 *").Step("step", "busybox").Obj(), "count/cronworkflows")
	tasksDone(t, ns, "the workflows' steps", 8, 5)
	for wave := range 3 {
		n := min(5, 12-5*wave)
		for i := range n {
			createAs(t, mallory, MakeAgentTask(fmt.Sprintf("ok-%d", 5*wave+i), ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = bigTask(0, 0) }).Obj())
		}
		tasksDone(t, ns, fmt.Sprintf("wave %d", wave+1), 8+5*wave+n, 5+5*wave+n)
	}
	refusedByQuota(t, mallory, MakeAgentTask("one-more", ns).Image("busybox").Obj(), "count/agenttasks")
	t.Logf("secrets, apps, tasks, workflows and schedules made at %s", time.Since(start).Round(time.Millisecond))
	wg.Wait()
	t.Logf("apps changed at %s", time.Since(start).Round(time.Millisecond))
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// Settled: the failing tasks failed, every task is down to its pods
	// kept, each app to its revisions kept and a ReplicaSet per
	// Deployment.
	poll(t, 3*time.Minute, "the namespace to settle", func(ctx context.Context) error {
		var tasks schedv1.AgentTaskList
		if err := sim.Client.List(ctx, &tasks, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, a := range tasks.Items {
			if !a.Status.Phase.Finished() {
				return fmt.Errorf("task %s is %s (%s)", a.Name, a.Status.Phase, a.Status.Message)
			}
			var pods corev1.PodList
			if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: a.Status.JobName}); err != nil {
				return err
			}
			// A failing task keeps its last attempt's pod and the one
			// before; the first of its three went.
			want, failing := 1, strings.HasPrefix(a.Name, "failing-")
			if failing {
				want = podsPerTask
			}
			if len(pods.Items) > want || failing && len(pods.Items) != want {
				return fmt.Errorf("task %s has %d pods, want %d (attempts %d, pruned %v)", a.Name, len(pods.Items), want, a.Status.Attempts, a.Status.Pruned)
			}
			if strings.HasPrefix(a.Name, "failing-") && (a.Status.Phase != schedv1.TaskFailed || a.Status.Attempts != 3) {
				return fmt.Errorf("task %s: %s after %d attempts, want Failed after 3", a.Name, a.Status.Phase, a.Status.Attempts)
			}
		}
		for _, app := range apps {
			var revs appsv1.ControllerRevisionList
			if err := sim.Client.List(ctx, &revs, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelUserDeployment: app}); err != nil {
				return err
			}
			// The app's own, not its StatefulSet's (which carry its pods'
			// labels). The current revision is the latest, and the last
			// that ran is app-a's latest too, app-b's none (its claim
			// never binds here): no revision is kept beyond the tier's 3.
			ours := slices.DeleteFunc(revs.Items, func(cr appsv1.ControllerRevision) bool {
				ref := metav1.GetControllerOf(&cr)
				return ref == nil || ref.Kind != "UserDeployment"
			})
			if len(ours) > 3 {
				return fmt.Errorf("app %s keeps %d revisions, want at most the tier's 3", app, len(ours))
			}
		}
		var deps appsv1.DeploymentList
		var sets appsv1.ReplicaSetList
		if err := sim.Client.List(ctx, &deps, client.InNamespace(ns)); err != nil {
			return err
		}
		if err := sim.Client.List(ctx, &sets, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(sets.Items) > len(deps.Items) {
			return fmt.Errorf("%d ReplicaSets for %d Deployments: old ones kept", len(sets.Items), len(deps.Items))
		}
		return nil
	})

	t.Logf("settled at %s", time.Since(start).Round(time.Millisecond))
	keepLongestLogs(t, ns)
	got := storedIn(ctx, t, ns)
	var sum int64
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "KIND\tOBJECTS\tBYTES\tBOUND\tBOUND BYTES\n")
	for _, k := range keys {
		s := got[k]
		b, ok := bound[k]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", k, s.count, human(s.bytes), b.count, human(b.count*b.each))
		if k == "events" {
			continue // they expire after --event-ttl; not in the bound
		}
		sum += s.bytes
		switch {
		case !ok:
			t.Errorf("%d %s (%v) in the namespace: a kind the bound leaves out", s.count, k, s.names)
		case s.count > b.count:
			t.Errorf("%d %s, more than the bound's %d (%s): %v", s.count, k, b.count, b.why, s.names)
		case s.bytes > b.count*b.each:
			t.Errorf("%s of %s, more than the bound's %s", human(s.bytes), k, human(b.count*b.each))
		}
	}
	fmt.Fprintf(tw, "all but events\t\t%s\t\t%s\n", human(sum), human(total(bound)))
	_ = tw.Flush()
	t.Logf("what free-tier namespace %s stores, filled:\n%s", ns, table.String())
	tiers := shippedTiers(t)
	for _, name := range []string{"free", "team", "enterprise"} {
		t.Logf("tier %s's bound: %s", name, human(total(boundOf(tiers[name]))))
	}
	if sum > total(bound) {
		t.Errorf("the namespace stores %s, more than the free tier's bound of %s", human(sum), human(total(bound)))
	}
}

// keepLongestLogs gives each task of ns the most of its pods' logs the
// operator keeps in its status (status.logs, KeptLogTaskBytes), as a
// member's tasks that write long logs would have: the simulated nodes
// serve no logs, so their records say only why. The kept logs are part
// of the task, which the bound counts at 1.5 MiB.
func keepLongestLogs(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	var tasks schedv1.AgentTaskList
	if err := sim.Client.List(ctx, &tasks, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, a := range tasks.Items {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := &schedv1.AgentTask{}
			if err := sim.Client.Get(ctx, client.ObjectKeyFromObject(&a), got); err != nil {
				return err
			}
			for i := range schedv1.KeptLogTaskBytes / schedv1.KeptLogBytes {
				got.Status.Logs = append(got.Status.Logs, schedv1.KeptLog{Pod: fmt.Sprintf("%s-long-%d", a.Name, i),
					Reason: schedv1.LogTruncated, Message: filler(1024, 'm'), Log: filler(schedv1.KeptLogBytes, 'l')})
			}
			return sim.Client.Status().Update(ctx, got)
		})
		if err != nil {
			t.Fatalf("keep task %s's longest logs: %v", a.Name, err)
		}
	}
}

// tasksDone waits until the namespace has n tasks, succeeded of them
// succeeded.
func tasksDone(t *testing.T, ns, what string, n, succeeded int) {
	t.Helper()
	poll(t, pollTimeout, what+" done", func(ctx context.Context) error {
		var tasks schedv1.AgentTaskList
		if err := sim.Client.List(ctx, &tasks, client.InNamespace(ns)); err != nil {
			return err
		}
		ok := 0
		for _, a := range tasks.Items {
			if a.Status.Phase == schedv1.TaskSucceeded {
				ok++
			}
		}
		if len(tasks.Items) != n || ok < succeeded {
			return fmt.Errorf("%d tasks, %d of them succeeded; want %d, %d", len(tasks.Items), ok, n, succeeded)
		}
		return nil
	})
}

// changeConfig changes app's config n times, waiting each time (and after
// the last) for the operator to record the change as a revision.
func changeConfig(ctx context.Context, c client.Client, ns, name string, n int) error {
	for i := 1; i <= n+1; i++ {
		var last error
		deadline := time.Now().Add(pollTimeout)
		for {
			ud := &schedv1.UserDeployment{}
			last = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ud)
			if last == nil && ud.Status.CurrentRevision < int64(i) {
				last = fmt.Errorf("revision %d not recorded yet (%d)", i, ud.Status.CurrentRevision)
			}
			if last == nil && i <= n {
				ud.Spec.Config = bigApp(ns, name, byte('a'+i), false).Spec.Config
				last = c.Update(ctx, ud)
			}
			if last == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("change %d of app %s: %v", i, name, last)
			}
			// Polling the app's status, which the operator writes.
			time.Sleep(250 * time.Millisecond)
		}
	}
	return nil
}

func human(n int64) string {
	switch {
	case n >= mib:
		return fmt.Sprintf("%.1f MiB", float64(n)/mib)
	case n >= kib:
		return fmt.Sprintf("%.1f KiB", float64(n)/kib)
	}
	return fmt.Sprintf("%d B", n)
}
