package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
)

// operator is one replica: the built operator as its own process,
// authenticated with its own token of the operator's service account.
type operator struct {
	name               string
	env                *tour.Env
	pid                int
	metrics, pprof     string // base URLs
	jti                string
	mu                 sync.Mutex
	peakHeap           float64            // largest heap in use seen
	maxDepth           map[string]float64 // largest work-queue depth seen, by queue
	heapStart, heapEnd float64            // live heap after a GC
}

// startOperators starts cfg.replicas replicas with leader election, the
// second once the first leads, each serving plain metrics and pprof on
// loopback. The client limits are the operator's flags
// (--kube-api-qps, --kube-api-burst); SCALE_OPERATOR_ARGS adds others.
func (s *bench) startOperators() {
	b := s.b
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	for i := range s.cfg.replicas {
		metricsAddr, err := testenv.FreeAddr()
		if err != nil {
			b.Fatal(err)
		}
		pprofAddr, err := testenv.FreeAddr()
		if err != nil {
			b.Fatal(err)
		}
		dir := filepath.Join(s.cfg.out, fmt.Sprintf("operator-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		env := &tour.Env{Root: root, Dir: dir, BinDir: s.bins, Kubeconfig: s.sim.Kubeconfig, Cluster: s.sim.Cluster, Log: os.Stderr,
			OperatorArgs: append([]string{"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false", "--pprof-bind-address=" + pprofAddr,
				fmt.Sprintf("--kube-api-qps=%d", s.cfg.qps), fmt.Sprintf("--kube-api-burst=%d", s.cfg.burst)}, s.cfg.operatorArgs...)}
		if err := env.StartOperator(s.ctx, false); err != nil {
			b.Fatal(err)
		}
		op := &operator{name: fmt.Sprintf("replica %d", i), env: env, pid: env.OperatorPID(),
			metrics: "http://" + metricsAddr + "/metrics", pprof: "http://" + pprofAddr, maxDepth: map[string]float64{}}
		s.ops = append(s.ops, op)
		if op.jti, err = tokenID(filepath.Join(dir, "operator.kubeconfig")); err != nil {
			b.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(s.ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return s.leader() != nil, nil
		})
		if err != nil {
			b.Fatalf("no replica leads a minute after %s started", op.name)
		}
		op.heapStart = op.liveHeap(s.ctx)
		go op.sample(s.ctx)
	}
}

// leader is the replica that holds the Lease, nil while none does.
func (s *bench) leader() *operator {
	for _, op := range s.ops {
		m, err := testenv.ScrapeMetrics(s.ctx, op.metrics)
		if err == nil && m.Sum("leader_election_master_status", nil) > 0 {
			return op
		}
	}
	return nil
}

// sample records, every two seconds, the largest heap in use and
// work-queue depths.
func (op *operator) sample(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		m, err := testenv.ScrapeMetrics(ctx, op.metrics)
		if err != nil {
			continue
		}
		op.mu.Lock()
		op.peakHeap = max(op.peakHeap, m.Sum("go_memstats_heap_inuse_bytes", nil))
		for q, d := range m.By("workqueue_depth", nil, "name") {
			op.maxDepth[q] = max(op.maxDepth[q], d)
		}
		op.mu.Unlock()
	}
}

// liveHeap is the heap in use right after a GC (pprof's heap profile with
// gc=1 reports runtime.MemStats.HeapAlloc).
func (op *operator) liveHeap(ctx context.Context) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, op.pprof+"/debug/pprof/heap?gc=1&debug=1", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n
		}
	}
	return 0
}

// phase is one stage of the run and what it cost.
type phase struct {
	name, unit string
	objects    int
	start, end time.Time
	created    time.Duration // until the last object was created
	cpu0, cpu  map[string]time.Duration
	api0, api  testenv.Samples
	op0, op    []testenv.Samples // by replica
	handoffs   handoffStats
	profiles   []string
}

// pids are the processes whose CPU time each phase records.
func (s *bench) pids() map[string]int {
	out := s.sim.PIDs()
	for i, op := range s.ops {
		out[fmt.Sprintf("operator-%d", i)] = op.pid
	}
	out["benchmark"] = os.Getpid()
	return out
}

func (s *bench) begin(name, unit string, objects int) *phase {
	// The API server takes one CPU profile at a time: the last run's
	// ends first.
	s.profiling.Wait()
	p := &phase{name: name, unit: unit, objects: objects, cpu0: map[string]time.Duration{}}
	for n, pid := range s.pids() {
		p.cpu0[n] = testenv.ProcessCPU(pid)
	}
	p.api0 = s.scrapeAPI()
	for _, op := range s.ops {
		m, _ := testenv.ScrapeMetrics(s.ctx, op.metrics)
		p.op0 = append(p.op0, m)
	}
	fmt.Fprintf(os.Stderr, "[scale] %s: %d %ss\n", name, objects, unit)
	p.start = time.Now()
	s.phases = append(s.phases, p)
	return p
}

func (s *bench) end(p *phase) {
	p.end = time.Now()
	p.cpu = map[string]time.Duration{}
	for n, pid := range s.pids() {
		p.cpu[n] = testenv.ProcessCPU(pid) - p.cpu0[n]
	}
	p.api = testenv.MetricsDelta(s.scrapeAPI(), p.api0)
	for i, op := range s.ops {
		m, _ := testenv.ScrapeMetrics(s.ctx, op.metrics)
		p.op = append(p.op, testenv.MetricsDelta(m, p.op0[i]))
	}
	fmt.Fprintf(os.Stderr, "[scale] %s done in %v\n", p.name, p.end.Sub(p.start).Round(100*time.Millisecond))
}

func (s *bench) scrapeAPI() testenv.Samples {
	m, err := testenv.ScrapeAPIServerMetrics(s.ctx, s.cs)
	if err != nil {
		s.b.Fatal(err)
	}
	return m
}

// profile takes CPU profiles of the API server and of the leading
// replica for cfg.profileSeconds, from three seconds into p.
func (s *bench) profile(p *phase) {
	if s.cfg.profileSeconds == 0 {
		return
	}
	lead := s.leader()
	s.profiling.Add(1)
	go func() {
		defer s.profiling.Done()
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(3 * time.Second):
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		save := func(who string, fetch func(context.Context) (io.ReadCloser, error)) {
			defer wg.Done()
			body, err := fetch(s.ctx)
			if err != nil {
				fmt.Fprintf(os.Stderr, "[scale] profile of %s: %v\n", who, err)
				return
			}
			defer body.Close()
			path := filepath.Join(s.cfg.out, p.name+"-"+who+".pprof")
			f, err := os.Create(path)
			if err != nil {
				return
			}
			defer f.Close()
			if _, err := io.Copy(f, body); err == nil {
				mu.Lock()
				p.profiles = append(p.profiles, path)
				mu.Unlock()
			}
		}
		secs := strconv.Itoa(s.cfg.profileSeconds)
		wg.Add(1)
		go save("kube-apiserver", func(ctx context.Context) (io.ReadCloser, error) {
			return s.cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).Timeout(time.Duration(s.cfg.profileSeconds+60) * time.Second).Stream(ctx)
		})
		if lead != nil {
			wg.Add(1)
			go save("operator", func(ctx context.Context) (io.ReadCloser, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, lead.pprof+"/debug/pprof/profile?seconds="+secs, nil)
				if err != nil {
					return nil, err
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return nil, err
				}
				return resp.Body, nil
			})
		}
		wg.Wait()
	}()
}

// settle waits until the leader has nothing queued and has finished no
// reconcile for five seconds (at most five minutes), then reads each
// replica's live heap.
func (s *bench) settle() {
	lead := s.leader()
	if lead == nil {
		s.b.Fatal("no replica leads")
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Minute)
	_, _ = testenv.WaitQuiet(ctx, lead.metrics, time.Second, 5)
	cancel()
	s.profiling.Wait()
	for _, op := range s.ops {
		op.heapEnd = op.liveHeap(s.ctx)
	}
}
