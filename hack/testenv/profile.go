package testenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// What benchmarks read of the processes they measure: CPU time from /proc
// (which, unlike wall time, holds on a machine busy with other work) and
// CPU profiles from kube-apiserver's /debug/pprof (on by default) or a Go
// process's pprof endpoint.

// ProcessCPU is the CPU time a process has used, user and system; zero
// when it cannot be read.
func ProcessCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command (field 2) may hold spaces; the fields after it do not.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// In USER_HZ, 100 on every Linux this runs on.
	return time.Duration(utime+stime) * time.Second / 100
}

// ProcessMemory is a process's resident set now and at its peak (VmRSS,
// VmHWM), in bytes.
func ProcessMemory(pid int) (rss, peak uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseUint(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			peak = n << 10
		}
	}
	return rss, peak
}

// APIServerPID finds the kube-apiserver serving host (a URL) by its
// --secure-port, for an envtest control plane, which does not say.
func APIServerPID(host string) (int, error) {
	host = strings.TrimSuffix(host, "/")
	port := host[strings.LastIndexByte(host, ':')+1:]
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if !strings.HasSuffix(args[0], "kube-apiserver") {
			continue
		}
		for _, a := range args {
			if a == "--secure-port="+port {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no kube-apiserver with --secure-port=%s", port)
}

// SaveAPIServerProfile writes a CPU profile of kube-apiserver over d to
// path, as the admin of cs.
func SaveAPIServerProfile(ctx context.Context, cs kubernetes.Interface, path string, d time.Duration) error {
	rc, err := cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).Stream(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, rc)
	return err
}

// APIServerCosts name where kube-apiserver's CPU goes, by the functions on
// the stack: pprof -focus expressions, which may overlap (a status write's
// CRD rules run inside its JSON patch).
var APIServerCosts = []struct{ Name, Focus string }{
	{"admission policies", `admission/plugin/policy/validating`},
	{"ResourceQuota admission", `admission/plugin/resourcequota`},
	{"CRD CEL rules", `apiextensions-apiserver/pkg/apiserver/schema/cel\.\(\*Validator\)`},
	{"CRD schema", `apiextensions-apiserver/pkg/apiserver/validation|kube-openapi/pkg/validation`},
	{"managed fields", `managedfields`},
	{"JSON patch", `\(\*patcher\)\.applyPatch`},
	{"watch events", `cacher\.\(\*cacheWatcher\)|cachingObject`},
	{"GC", `runtime.gcBgMarkWorker`},
}

// CostBreakdown is the share of a kube-apiserver CPU profile in each of
// APIServerCosts, on one line.
func CostBreakdown(path string) string {
	total := PprofFocus(path, "")
	if total == 0 {
		return "(no samples)"
	}
	parts := []string{fmt.Sprintf("%.2fs sampled", total)}
	for _, a := range APIServerCosts {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", a.Name, 100*PprofFocus(path, a.Focus)/total))
	}
	return strings.Join(parts, ", ")
}

// PprofFocus is the CPU seconds of a profile's samples with a function
// matching focus on the stack (all samples for ""), from `go tool pprof`.
func PprofFocus(path, focus string) float64 {
	args := []string{"tool", "pprof", "-top", "-nodecount=1000000", "-nodefraction=0"}
	if focus != "" {
		args = append(args, "-focus="+focus)
	}
	out, err := exec.Command("go", append(args, path)...).CombinedOutput()
	if err != nil {
		return 0
	}
	// "Showing nodes accounting for 1.20s, 30% of 4s total": with every
	// node shown, the first figure is the sum of the focused samples.
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "Showing nodes accounting for "); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if d, err := time.ParseDuration(strings.TrimSuffix(f[0], ",")); err == nil {
					return d.Seconds()
				}
			}
		}
	}
	return 0
}

// PprofTop is `go tool pprof -top` of a profile, its first n functions.
func PprofTop(path string, n int) string {
	out, err := exec.Command("go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n), path).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(go tool pprof %s: %v: %s)", path, err, out)
	}
	return string(out)
}
