package argo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// writeReport writes the side-by-side table and each system's details as
// Markdown, ready for docs/contributors/benchmarks.md, into the output
// folder, and returns it.
func writeReport(cfg config, runs []*run, elapsed time.Duration) string {
	w := &strings.Builder{}
	f := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	f("\n### Against Argo Workflows, %s\n\n", time.Now().UTC().Format("2 January 2006 15:04 MST"))
	f("Work, on each system: a %d-step chain passing one output (idle hand-off); a fan-out 1 → %d and fan-in; %d workflows of three steps passing outputs, submitted by %d clients at once (hand-off under load); %d one-step workflows, by the same clients. ",
		cfg.chain, cfg.fan, cfg.workflows, cfg.clients, cfg.oneStep)
	f("Each system on a fresh simulated cluster of its own (%s; 6 kwok nodes; the controller manager and scheduler at 200 requests a second), one after the other; the whole run %v. ",
		filepath.Base(os.Getenv("KUBEBUILDER_ASSETS")), elapsed.Round(time.Second))
	f("Argo Workflows %s (workflow-controller built by hack/build-argo.sh, %s), kubectl-sched %s; %d CPUs.\n\n", argoVersion, runtime.Version(), revision(), runtime.NumCPU())
	for _, r := range runs {
		f("- %s: controller %s; load average at the end %s; %v.\n", r.system, r.controllerArgs, strings.Join(strings.Fields(r.load)[:3], " "), r.elapsed.Round(time.Second))
	}
	var failed []string
	for _, r := range runs {
		r.obs.mu.Lock()
		for _, x := range r.obs.failed {
			failed = append(failed, r.system+": "+x)
		}
		r.obs.mu.Unlock()
		if r.emuCounts.FirstError != "" {
			failed = append(failed, r.system+": executor emulation: "+r.emuCounts.FirstError)
		}
	}
	if len(failed) > 0 {
		f("\nNot succeeded: %s\n", strings.Join(failed, "; "))
	}

	f("\n| | %s |\n|---|%s\n", strings.Join(systemNames(runs), " | "), strings.Repeat("---|", len(runs)))
	row := func(label string, cell func(r *run) string) {
		cells := make([]string, len(runs))
		for i, r := range runs {
			cells[i] = cell(r)
		}
		f("| %s | %s |\n", label, strings.Join(cells, " | "))
	}
	row(fmt.Sprintf("hand-off idle, %d-step chain, p50 / p99", cfg.chain), func(r *run) string { return handoffCell(r.phase("idle chain")) })
	row(fmt.Sprintf("fan-out 1 → %d / fan-in", cfg.fan), func(r *run) string {
		p := r.phase("fan")
		return ms(p.fanOut) + " / " + ms(p.fanIn)
	})
	row(fmt.Sprintf("hand-off under load, %d three-step workflows, p50 / p99", cfg.workflows), func(r *run) string { return handoffCell(r.phase("three-step")) })
	row("three-step workflows per minute", func(r *run) string { return perMinute(r.phase("three-step")) })
	row("one-step workflows per minute", func(r *run) string { return perMinute(r.phase("one-step")) })
	for _, ph := range []string{"three-step", "one-step"} {
		row("CPU per "+ph+" workflow, every process", func(r *run) string { return cpuCell(r.phase(ph), nil) })
		row("… kube-apiserver and etcd", func(r *run) string { return cpuCell(r.phase(ph), []string{"kube-apiserver", "etcd"}) })
		row("… the controller", func(r *run) string { return cpuCell(r.phase(ph), []string{"controller"}) })
		row("… the executor emulation", func(r *run) string { return cpuCell(r.phase(ph), []string{"executor emulation"}) })
		row("API writes per step, "+ph+" (of them the executor's: task results created and patched)", func(r *run) string { return writesCell(r, r.phase(ph)) })
	}
	f("\nHand-off: a step's pod first seen Succeeded to the next step's pod first seen, both from one informer of the benchmark. Per minute: workflows from the first create to the last finished. CPU: /proc, from a phase's start until the cluster is quiet after it (no write for 3 s), every process of the cluster, the controller, the executor emulation and the benchmark itself (submitting and watching), divided by the phase's workflows. Writes: the API server's apiserver_request_total (POST, PUT, PATCH, DELETE, APPLY; nodes and leases aside), divided by the phase's steps; for Argo less the emulation's one pod patch per step that lets kwok end the pod (a kubelet's part, not Argo's). The executor's writes (a WorkflowTaskResult created, its outputs patched, its report-outputs-completed label set: three per pod) are Argo's; deletes are counted apart by resource below (Argo's controller deletes a workflow's task results when it ends).\n")

	for _, r := range runs {
		f("\n#### %s, by phase\n\nCPU per workflow (ms), by process:\n\n", r.system)
		procs := []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "controller"}
		if r.emu != nil {
			procs = append(procs, "executor emulation")
		}
		procs = append(procs, "benchmark")
		f("| phase | %s | all |\n|---|%s---|\n", strings.Join(procs, " | "), strings.Repeat("---|", len(procs)))
		for _, p := range r.phases {
			cells := []string{}
			for _, n := range procs {
				cells = append(cells, fmt.Sprintf("%.1f", msPer(p.cpu[n], len(p.workflows))))
			}
			f("| %s (%d) | %s | %s |\n", p.name, len(p.workflows), strings.Join(cells, " | "), cpuCell(p, nil))
		}
		f("\nAPI writes per step, by resource:\n\n")
		for _, p := range r.phases {
			wr := r.writes(p)
			var parts []string
			for res, n := range wr {
				if per := n / float64(p.steps); per >= 0.005 {
					parts = append(parts, fmt.Sprintf("%s %.2f", res, per))
				}
			}
			sort.Strings(parts)
			f("- %s (%d steps): %.2f: %s\n", p.name, p.steps, total(wr)/float64(p.steps), strings.Join(parts, ", "))
		}
		if r.emu != nil {
			c := r.emuCounts
			f("\nExecutor emulation: %d pods reported, %d WorkflowTaskResult writes, %d pods released, %d failed requests (retried).\n", c.Pods, c.ResultWrites, c.PodReleases, c.FailedWrites)
		}
	}
	_ = os.WriteFile(filepath.Join(cfg.out, "report.md"), []byte(w.String()), 0o644)
	return w.String()
}

func systemNames(runs []*run) []string {
	names := map[string]string{argoShipped: "Argo as shipped", argoTuned: "Argo tuned", kubectlSched: "kubectl-sched"}
	var out []string
	for _, r := range runs {
		out = append(out, names[r.system])
	}
	return out
}

func (r *run) phase(name string) *phase {
	for _, p := range r.phases {
		if p.name == name {
			return p
		}
	}
	return nil
}

// writes are a phase's API writes by resource; for Argo, pods less the
// emulation's release of each pod.
func (r *run) writes(p *phase) map[string]float64 {
	wr := writes(p.api)
	if r.emu != nil {
		wr["pods"] -= float64(p.steps)
	}
	return wr
}

func handoffCell(p *phase) string {
	if p == nil || len(p.handoffs) == 0 {
		return "–"
	}
	s := ms(testenv.Percentile(p.handoffs, 50)) + " / " + ms(testenv.Percentile(p.handoffs, 99))
	if p.missing > 0 {
		s += fmt.Sprintf(" (%d not observed)", p.missing)
	}
	return s
}

func perMinute(p *phase) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(len(p.workflows))/p.allDone.Sub(p.start).Minutes())
}

// cpuCell is the CPU per workflow of the processes named (every one for
// nil), in ms.
func cpuCell(p *phase, procs []string) string {
	if p == nil {
		return "–"
	}
	var sum time.Duration
	found := false
	for n, d := range p.cpu {
		if procs == nil || contains(procs, n) {
			sum += d
			found = true
		}
	}
	if !found {
		return "–"
	}
	return fmt.Sprintf("%.0f ms", msPer(sum, len(p.workflows)))
}

func writesCell(r *run, p *phase) string {
	if p == nil {
		return "–"
	}
	wr := r.writes(p)
	s := fmt.Sprintf("%.2f", total(wr)/float64(p.steps))
	if n := wr["workflowtaskresults"]; n > 0 {
		s += fmt.Sprintf(" (%.2f)", n/float64(p.steps))
	}
	return s
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func msPer(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(max(n, 1))
}

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 0, 64) + " ms"
}

// revision is the tree's commit, as git describes it.
func revision() string {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "(unknown)"
	}
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "(unknown)"
	}
	return strings.TrimSpace(string(out))
}
