package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// printReport prints the run's figures as Markdown, ready to paste into
// docs/contributors/benchmarks.md.
func (s *bench) printReport(elapsed time.Duration) {
	w := &strings.Builder{}
	f := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	enterprise := 0
	for _, t := range s.tenants {
		if t.tier == "enterprise" {
			enterprise++
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	f("\n### Scale run, %s\n\n", time.Now().UTC().Format("2 January 2006 15:04 MST"))
	f("%d workflows of 3 steps, %d tasks, %d apps of two services; %d tenants (%d enterprise, %d team); %d kwok nodes; %d operator replica(s) at --kube-api-qps=%d --kube-api-burst=%d %s; %d submitters; %d CPUs; load average at the end %s; the whole run %v.\n\n",
		s.cfg.workflows, s.cfg.tasks, s.cfg.apps, len(s.tenants), enterprise, len(s.tenants)-enterprise, s.cfg.nodes, len(s.ops), s.cfg.qps, s.cfg.burst,
		strings.Join(s.cfg.operatorArgs, " "), s.cfg.submitters, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "), elapsed.Round(time.Second))
	s.obs.mu.Lock()
	if len(s.obs.failed) > 0 {
		f("Not succeeded (first ten): %s\n\n", strings.Join(s.obs.failed, "; "))
	}
	s.obs.mu.Unlock()

	f("| run | objects | all created after | all done after | per minute | against the floor |\n|---|---|---|---|---|---|\n")
	for _, p := range s.phases {
		rate := float64(p.objects) / p.end.Sub(p.start).Minutes()
		vs := ""
		if fl := s.phase("floor-" + p.name); fl != nil {
			floorRate := float64(fl.objects) / fl.end.Sub(fl.start).Minutes()
			vs = fmt.Sprintf("%.2fx", rate/floorRate)
		}
		f("| %s | %d %ss | %v | %v | %.0f | %s |\n", p.name, p.objects, p.unit, p.created.Round(100*time.Millisecond), p.end.Sub(p.start).Round(100*time.Millisecond), rate, vs)
	}

	f("\nStep hand-off, pod Succeeded to the next step's Job (informers on the API server):\n\n| run | hand-offs | p50 | p99 | max | legs p50 / p99: task Succeeded, next task, its Job |\n|---|---|---|---|---|---|\n")
	for _, p := range s.phases {
		h := p.handoffs
		if len(h.all) == 0 {
			continue
		}
		legs := ""
		if len(h.legs[0]) > 0 {
			legs = fmt.Sprintf("%s / %s, %s / %s, %s / %s", ms(testenv.Percentile(h.legs[0], 50)), ms(testenv.Percentile(h.legs[0], 99)),
				ms(testenv.Percentile(h.legs[1], 50)), ms(testenv.Percentile(h.legs[1], 99)), ms(testenv.Percentile(h.legs[2], 50)), ms(testenv.Percentile(h.legs[2], 99)))
		}
		f("| %s | %d | %s | %s | %s | %s |\n", p.name, len(h.all), ms(testenv.Percentile(h.all, 50)), ms(testenv.Percentile(h.all, 99)), ms(testenv.Percentile(h.all, 100)), legs)
	}

	s.printCPU(f)
	s.printAPIServer(f)
	s.printRequests(f)
	s.printOperators(f)
	for _, p := range s.phases {
		for _, path := range p.profiles {
			f("\nCPU profile %s (%ds from 3s into the run)", filepath.Base(path), s.cfg.profileSeconds)
			if strings.Contains(path, "kube-apiserver") {
				f("; where it went: %s", testenv.CostBreakdown(path))
			}
			f(":\n\n```\n%s```\n", testenv.PprofTop(path, 25))
		}
	}
	fmt.Print(w.String())
	_ = os.WriteFile(filepath.Join(s.cfg.out, "report.md"), []byte(w.String()), 0o644)
}

func (s *bench) phase(name string) *phase {
	for _, p := range s.phases {
		if p.name == name {
			return p
		}
	}
	return nil
}

type printf func(string, ...any)

// printCPU prints the CPU time each process spent per object of each run:
// unlike wall time, it holds on a machine shared with other work.
func (s *bench) printCPU(f printf) {
	procs := []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}
	for i := range s.ops {
		procs = append(procs, fmt.Sprintf("operator-%d", i))
	}
	procs = append(procs, "benchmark")
	f("\nCPU time per object (ms; /proc), by process:\n\n| run | %s | all |\n|---|%s---|\n", strings.Join(procs, " | "), strings.Repeat("---|", len(procs)))
	for _, p := range s.phases {
		row := []string{}
		total := time.Duration(0)
		for _, n := range procs {
			row = append(row, fmt.Sprintf("%.1f", float64(p.cpu[n].Microseconds())/1000/float64(p.objects)))
			total += p.cpu[n]
		}
		f("| %s (per %s) | %s | %.1f |\n", p.name, p.unit, strings.Join(row, " | "), float64(total.Microseconds())/1000/float64(p.objects))
	}
}

// printAPIServer prints what the API server did per object: its write
// requests (nodes and leases aside: the kwok nodes' heartbeats), its mean
// latency per create, and where admission spent its time.
func (s *bench) printAPIServer(f printf) {
	f("\nAPI server, per object: writes from every client (nodes and leases aside), mean create latency, admission time:\n\n| run | writes | POST agenttasks | POST workflows | POST jobs | POST pods | admission ms per write |\n|---|---|---|---|---|---|---|\n")
	for _, p := range s.phases {
		writes := 0.0
		for _, x := range p.api["apiserver_request_total"] {
			switch x.Labels["verb"] {
			case "POST", "PUT", "PATCH", "DELETE", "APPLY":
				if r := x.Labels["resource"]; r != "nodes" && r != "leases" {
					writes += x.Value
				}
			}
		}
		mean := func(res string) string {
			n := p.api.Sum("apiserver_request_duration_seconds_count", map[string]string{"verb": "POST", "resource": res, "subresource": ""})
			if n == 0 {
				return ""
			}
			return ms(time.Duration(p.api.Sum("apiserver_request_duration_seconds_sum", map[string]string{"verb": "POST", "resource": res, "subresource": ""}) / n * float64(time.Second)))
		}
		adm := p.api.Sum("apiserver_admission_step_admission_duration_seconds_sum", nil)
		f("| %s (per %s) | %.1f | %s | %s | %s | %s | %.2f |\n", p.name, p.unit, writes/float64(p.objects), mean("agenttasks"), mean("workflows"), mean("jobs"), mean("pods"), adm*1000/max(writes, 1))
	}
	f("\nAdmission time by plugin and by policy, ms per object (apiserver_admission_controller_admission_duration_seconds, apiserver_validating_admission_policy_check_duration_seconds):\n\n")
	for _, p := range s.phases {
		if p.objects < 10 {
			continue
		}
		parts := []string{}
		for k, v := range p.api.By("apiserver_admission_controller_admission_duration_seconds_sum", nil, "name") {
			if v*1000/float64(p.objects) >= 0.01 {
				parts = append(parts, fmt.Sprintf("%s %.2f", k, v*1000/float64(p.objects)))
			}
		}
		for k, v := range p.api.By("apiserver_validating_admission_policy_check_duration_seconds_sum", nil, "policy") {
			if v*1000/float64(p.objects) >= 0.01 {
				parts = append(parts, fmt.Sprintf("policy %s %.2f", strings.TrimPrefix(k, "kubectl-sched-"), v*1000/float64(p.objects)))
			}
		}
		sort.Strings(parts)
		f("- %s (per %s): %s\n", p.name, p.unit, strings.Join(parts, ", "))
	}
}

// printRequests prints the operator's requests, as the API server's audit
// log recorded them, per object of each run (the leader) and in all (each
// standby).
func (s *bench) printRequests(f printf) {
	reqs, err := readAudit(s.auditLog)
	if err != nil {
		f("\n(audit log: %v)\n", err)
		return
	}
	lead := s.leader()
	windows := map[*phase][2]time.Time{}
	for i, p := range s.phases {
		until := time.Now()
		if i+1 < len(s.phases) {
			until = s.phases[i+1].start
		}
		windows[p] = [2]time.Time{p.start, until}
	}
	counts := map[*phase]map[string]int{}
	kinds := map[string]bool{}
	standby := map[string]map[string]int{}
	for _, r := range reqs {
		if lead == nil || r.jti != lead.jti {
			if standby[r.jti] == nil {
				standby[r.jti] = map[string]int{}
			}
			standby[r.jti][r.what]++
			continue
		}
		for p, w := range windows {
			if !r.at.Before(w[0]) && r.at.Before(w[1]) {
				if counts[p] == nil {
					counts[p] = map[string]int{}
				}
				counts[p][r.what]++
				kinds[r.what] = true
			}
		}
	}
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	var runs []*phase
	for _, p := range s.phases {
		if !strings.HasPrefix(p.name, "floor-") {
			runs = append(runs, p)
		}
	}
	f("\nThe operator's requests per object (the leader; the API server's audit log, from each run's start to the next's; watches counted when they end):\n\n| request |")
	for _, p := range runs {
		f(" %s (per %s) |", p.name, p.unit)
	}
	f("\n|---|%s\n", strings.Repeat("---|", len(runs)))
	totals := make([]float64, len(runs))
	for _, k := range names {
		f("| %s |", k)
		for i, p := range runs {
			v := float64(counts[p][k]) / float64(p.objects)
			totals[i] += v
			f(" %.2f |", v)
		}
		f("\n")
	}
	f("| all |")
	for _, t := range totals {
		f(" %.2f |", t)
	}
	f("\n")
	for _, op := range s.ops {
		if op == lead {
			continue
		}
		c := standby[op.jti]
		minutes := time.Since(s.phases[0].start).Minutes()
		var parts []string
		total := 0
		for k, v := range c {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
			total += v
		}
		sort.Strings(parts)
		f("\nThe standby (%s): %d requests over the run, %.1f a minute: %s\n", op.name, total, float64(total)/minutes, strings.Join(parts, ", "))
	}
}

// printOperators prints each replica's memory, and the leader's work
// queues and client-side throttling per run.
func (s *bench) printOperators(f printf) {
	cached := s.countCached()
	f("\nOperator memory (cached at the end: %s):\n\n| replica | peak RSS (VmHWM) | peak heap in use | live heap after GC: start, end | per cached object |\n|---|---|---|---|---|\n", cached.String())
	for _, op := range s.ops {
		_, peak := testenv.ProcessMemory(op.pid)
		op.mu.Lock()
		per := ""
		if cached.total > 0 {
			per = fmt.Sprintf("%.2f KiB", (op.heapEnd-op.heapStart)/1024/float64(cached.total))
		}
		f("| %s | %.1f MiB | %.1f MiB | %.1f MiB, %.1f MiB | %s |\n", op.name, mib(float64(peak)), mib(op.peakHeap), mib(op.heapStart), mib(op.heapEnd), per)
		op.mu.Unlock()
	}
	lead := s.leader()
	idx := -1
	for i, op := range s.ops {
		if op == lead {
			idx = i
		}
	}
	if idx < 0 {
		return
	}
	lead.mu.Lock()
	var depths []string
	for q, d := range lead.maxDepth {
		depths = append(depths, fmt.Sprintf("%s %.0f", q, d))
	}
	lead.mu.Unlock()
	sort.Strings(depths)
	f("\nWork queues of the leader: largest depth seen (sampled every 2s): %s.\n\n| run | queue wait mean / p99 (bucket bound), by controller | reconciles per object | client throttling, s |\n|---|---|---|---|\n", strings.Join(depths, ", "))
	for _, p := range s.phases {
		if idx >= len(p.op) || p.op[idx] == nil {
			continue
		}
		m := p.op[idx]
		var waits []string
		for q, n := range m.By("workqueue_queue_duration_seconds_count", nil, "name") {
			if n == 0 {
				continue
			}
			sum := m.Sum("workqueue_queue_duration_seconds_sum", map[string]string{"name": q})
			waits = append(waits, fmt.Sprintf("%s %s / %ss", q, ms(time.Duration(sum/n*float64(time.Second))),
				strconv.FormatFloat(m.Quantile("workqueue_queue_duration_seconds", map[string]string{"name": q}, 0.99), 'g', 2, 64)))
		}
		sort.Strings(waits)
		f("| %s | %s | %.2f | %.1f |\n", p.name, strings.Join(waits, "; "), m.Sum("controller_runtime_reconcile_total", nil)/float64(p.objects),
			m.Sum("rest_client_rate_limiter_duration_seconds_sum", nil))
	}
}

// cachedCount is how many objects of each kind the operator caches (the
// kinds it selects by its label, and its own kinds), counted from the API
// server as metadata.
type cachedCount struct {
	by    map[string]int
	total int
}

func (c cachedCount) String() string {
	var parts []string
	for k, v := range c.by {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func (s *bench) countCached() cachedCount {
	c := cachedCount{by: map[string]int{}}
	managed := client.MatchingLabels{schedv1.LabelManagedBy: schedv1.ManagedByValue}
	for _, k := range []struct {
		gvk      schema.GroupVersionKind
		selected bool
	}{
		{schedv1.GroupVersion.WithKind("AgentTaskList"), false},
		{schedv1.GroupVersion.WithKind("WorkflowList"), false},
		{schedv1.GroupVersion.WithKind("UserDeploymentList"), false},
		{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "JobList"}, true},
		{schema.GroupVersionKind{Version: "v1", Kind: "PodList"}, true},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DeploymentList"}, true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceList"}, true},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"}, true},
		{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "IngressList"}, true},
		{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicyList"}, true},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ControllerRevisionList"}, true},
	} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.gvk)
		var opts []client.ListOption
		if k.selected {
			opts = append(opts, managed)
		}
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		err := s.admin.List(ctx, list, opts...)
		cancel()
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(k.gvk.Kind, "List")
		c.by[name] = len(list.Items)
		c.total += len(list.Items)
	}
	return c
}
