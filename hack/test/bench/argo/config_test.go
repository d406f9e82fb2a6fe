package argo

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// config is the run's size and the systems it runs, from the environment
// (ARGO_BENCH_*); the defaults are issue 38's.
type config struct {
	chain, fan     int // steps of the idle chain; branches of the fan
	workflows      int // three-step workflows under load
	oneStep        int // one-step workflows
	clients        int // submitters at once
	systems        []string
	tunedQPS       int // Argo tuned: --qps, and --burst twice it
	emulateWorkers int // the executor emulation's writers at once
	out            string
}

// The systems, in the order they run.
const (
	argoShipped  = "argo"
	argoTuned    = "argo-tuned"
	kubectlSched = "kubectl-sched"
)

func loadConfig(b *testing.B) config {
	c := config{
		chain: envInt(b, "ARGO_BENCH_CHAIN", 20), fan: envInt(b, "ARGO_BENCH_FAN", 20),
		workflows: envInt(b, "ARGO_BENCH_WORKFLOWS", 500), oneStep: envInt(b, "ARGO_BENCH_ONE_STEP", 1000),
		clients: envInt(b, "ARGO_BENCH_CLIENTS", 20), tunedQPS: envInt(b, "ARGO_BENCH_TUNED_QPS", 200),
		emulateWorkers: envInt(b, "ARGO_BENCH_EMULATOR_WORKERS", 50),
		systems:        strings.Split(envString("ARGO_BENCH_SYSTEMS", argoShipped+","+argoTuned+","+kubectlSched), ","),
		out:            os.Getenv("ARGO_BENCH_OUT"),
	}
	if c.chain < 2 || c.fan < 1 || c.clients < 1 || c.tunedQPS < 1 || c.emulateWorkers < 1 {
		b.Fatalf("ARGO_BENCH_CHAIN must be at least 2, ARGO_BENCH_FAN, _CLIENTS, _TUNED_QPS and _EMULATOR_WORKERS at least 1: %+v", c)
	}
	for _, s := range c.systems {
		if s != argoShipped && s != argoTuned && s != kubectlSched {
			b.Fatalf("ARGO_BENCH_SYSTEMS=%q: each must be %s, %s or %s", os.Getenv("ARGO_BENCH_SYSTEMS"), argoShipped, argoTuned, kubectlSched)
		}
	}
	if c.out == "" {
		dir, err := os.MkdirTemp("", "kubectl-sched-argobench-")
		if err != nil {
			b.Fatal(err)
		}
		c.out = dir
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		b.Fatal(err)
	}
	return c
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q is not a whole number", name, v)
	}
	return n
}
