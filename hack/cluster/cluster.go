// Package cluster runs a simulated Kubernetes cluster on this machine with
// nothing downloaded but Go modules: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler are real; nodes are fake and
// their pods are simulated by kwok (no containers run).
//
// Pods on the fake nodes follow the kwok stages embedded from kwok/*.yaml;
// annotations on a pod (Annotation* constants) choose what happens to it:
// an image pull error, a failing readiness probe, how long a Job's pod runs,
// its exit code and termination message.
//
// Integration tests call Start in TestMain and Stop at the end; people use
// the localcluster command (make cluster-up / cluster-down).
//
// Why this package rather than kwokctl (kwok's own cluster tool, which can
// run these binaries too): docs/contributors/testing.md, "Why hack/cluster, not kwokctl", has
// the measurements. In short, no faster, and kwokctl's clusters cannot
// start side by side (they take the same ports) and outlive a test binary
// that crashes.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Pod annotations read by the kwok stages (see kwok/*.yaml).
const (
	// AnnotationImagePullError keeps a pod Pending with every container
	// waiting with this reason, e.g. "ErrImagePull" or "ImagePullBackOff".
	AnnotationImagePullError = "sim.kubectl-sched.dev/image-pull-error"
	// AnnotationReady "false" keeps a Running pod not Ready (containers
	// running, ready=false), like a failing readiness probe. It can be
	// changed while the pod runs.
	AnnotationReady = "sim.kubectl-sched.dev/ready"
	// AnnotationRunSeconds is how long a Job's pod runs, in seconds from its
	// start (default 1).
	AnnotationRunSeconds = "sim.kubectl-sched.dev/run-seconds"
	// AnnotationExitCode is the exit code of a Job pod's containers
	// (default 0): 0 gives phase Succeeded, anything else Failed.
	AnnotationExitCode = "sim.kubectl-sched.dev/exit-code"
	// AnnotationTerminationMessage is the containers' termination message.
	// With AnnotationInitExitCode it is the failing init container's.
	AnnotationTerminationMessage = "sim.kubectl-sched.dev/termination-message"
	// AnnotationInitExitCode makes a pod's first init container fail with
	// this exit code and crash-loop, so the pod stays Pending, not
	// Initialized (as a SchedExt preflight on a kernel without sched_ext).
	AnnotationInitExitCode = "sim.kubectl-sched.dev/init-exit-code"
	// AnnotationCrashExitCode makes a pod's containers crash-loop with this
	// exit code: Running, not Ready, waiting in CrashLoopBackOff.
	AnnotationCrashExitCode = "sim.kubectl-sched.dev/crash-exit-code"
	// AnnotationConfigError keeps a pod Pending with every container
	// waiting in CreateContainerConfigError with this message, as for a
	// missing Secret or ConfigMap.
	AnnotationConfigError = "sim.kubectl-sched.dev/config-error"
)

// Env vars of a Job pod's first container that win over
// AnnotationExitCode and AnnotationTerminationMessage: a workflow
// substitutes references (a forEach step's ${item}) into env values, never
// into annotations, so each item's pod can end its own way.
const (
	EnvExitCode           = "SIM_EXIT_CODE"
	EnvTerminationMessage = "SIM_TERMINATION_MESSAGE"
)

// Node labels and taints used by DefaultNodes and Start.
const (
	// KwokNodeAnnotation marks nodes kwok manages (value "fake").
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	LabelZone          = "topology.kubernetes.io/zone"
	LabelPool          = "node.kubectl-sched.dev/pool"
	LabelSpot          = "node.kubectl-sched.dev/spot"
	LabelGPU           = "node.kubectl-sched.dev/gpu"
	TaintSpot          = "node.kubectl-sched.dev/spot"
	TaintGPU           = "nvidia.com/gpu"
)

// Options configures Start.
type Options struct {
	// Dir holds the cluster's state: certificates, kubeconfig, etcd data,
	// logs/ and pids/. Required. One cluster per Dir.
	Dir string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok. Empty: $KUBEBUILDER_ASSETS if it has all five,
	// else the folder printed by hack/build-control-plane.sh (which builds
	// them on first use).
	BinDir string
	// Nodes to create; empty means DefaultNodes().
	Nodes []Node
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// ExtraControllerManagerArgs are appended to kube-controller-manager's
	// flags, e.g. --kube-api-qps=200 for benchmarks.
	ExtraControllerManagerArgs []string
	// ExtraAPIServerArgs are appended to kube-apiserver's flags, e.g. an
	// audit policy for a benchmark that counts a client's requests.
	ExtraAPIServerArgs []string
	// ExtraSchedulerArgs are appended to kube-scheduler's flags, e.g.
	// --kube-api-qps=200: its default of 50 binds at most 50 pods a second.
	ExtraSchedulerArgs []string
	// RealNode adds the real node (RealNodeName, pool "real") when the host
	// can run it (RealNodeUnavailable); otherwise Start logs why and
	// starts the kwok nodes only. Cluster.RealNode tells which happened.
	RealNode bool
	// Detach keeps the processes running after this process exits (the
	// localcluster command). Otherwise the kernel kills them when this
	// process dies, so a test binary that crashes or times out leaves
	// nothing behind.
	Detach bool
}

// Node describes a fake node. CPU, Memory and Pods are its capacity (and
// allocatable); empty values take "8", "32Gi" and 110. Every node also
// has 100Gi of ephemeral-storage, as a kubelet reports its disk: the
// tiers give containers ephemeral-storage requests, which a node without
// it could never fit.
type Node struct {
	Name   string
	Labels map[string]string
	Taints []corev1.Taint
	CPU    string
	Memory string
	Pods   int
	// ExtendedResources adds capacity such as {"nvidia.com/gpu": "4"}.
	ExtendedResources map[string]string
}

// DefaultNodes returns six nodes across three zones: a general node per zone
// (zone-a/b/c), a highmem node in zone-a, a tainted spot node in zone-b and a
// tainted GPU node in zone-c.
func DefaultNodes() []Node {
	general := func(zone string) Node {
		return Node{
			Name:   "sim-general-" + zone,
			Labels: map[string]string{LabelZone: "zone-" + zone, LabelPool: "general"},
			CPU:    "8", Memory: "32Gi", Pods: 110,
		}
	}
	return []Node{
		general("a"),
		general("b"),
		general("c"),
		{
			Name:   "sim-highmem-a",
			Labels: map[string]string{LabelZone: "zone-a", LabelPool: "highmem"},
			CPU:    "16", Memory: "128Gi", Pods: 110,
		},
		{
			Name:   "sim-spot-b",
			Labels: map[string]string{LabelZone: "zone-b", LabelPool: "spot", LabelSpot: "true"},
			Taints: []corev1.Taint{{Key: TaintSpot, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			CPU:    "4", Memory: "16Gi", Pods: 110,
		},
		{
			Name:   "sim-gpu-c",
			Labels: map[string]string{LabelZone: "zone-c", LabelPool: "gpu", LabelGPU: "true"},
			Taints: []corev1.Taint{{Key: TaintGPU, Value: "present", Effect: corev1.TaintEffectNoSchedule}},
			CPU:    "16", Memory: "64Gi", Pods: 110,
			ExtendedResources: map[string]string{"nvidia.com/gpu": "4"},
		},
	}
}

// Cluster is a running cluster.
type Cluster struct {
	// Dir is the state folder (absolute).
	Dir string
	// Kubeconfig is the path of an admin kubeconfig (group system:masters).
	Kubeconfig string
	// Server is the API server's URL.
	Server string
	// RealNode is the real node's name; empty when the cluster has none.
	RealNode string

	pids  map[string]int
	procs map[string]*process // nil when started by another process
}

// RESTConfig returns an admin client configuration for the cluster.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// client-go's default of 5 QPS makes polling tests crawl.
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// PIDs returns the process id of each component, by binary name.
func (c *Cluster) PIDs() map[string]int {
	out := make(map[string]int, len(c.pids))
	for k, v := range c.pids {
		out[k] = v
	}
	return out
}

// Stop stops the cluster's processes; see Stop.
func (c *Cluster) Stop() error {
	return Stop(c.Dir)
}

// Start starts a cluster in o.Dir and returns once the API server is ready,
// every node is Ready and schedulable, and the controller manager has created
// the default ServiceAccount.
//
// If o.Dir already holds a healthy running cluster, Start reuses it without
// restarting anything (it only creates missing nodes; BinDir and
// the Extra*Args are not applied). Otherwise it stops whatever is
// left there and starts afresh: etcd data and certificates are recreated;
// logs/ is kept but each log is truncated. Concurrent Starts on one Dir wait
// for each other.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("cluster: Options.Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if len(o.Nodes) == 0 {
		o.Nodes = DefaultNodes()
	}
	lg := logger{o.Log}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}

	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if c, err := Attach(ctx, dir); err == nil {
		lg.printf("reusing the running cluster in %s (%s)", dir, c.Server)
		if err := c.setUp(ctx, lg, o.Nodes); err != nil {
			return nil, err
		}
		return c, nil
	} else if hasPIDs(dir) {
		lg.printf("the cluster in %s is not healthy (%v); stopping what is left of it", dir, err)
		if err := Stop(dir); err != nil {
			return nil, err
		}
	}

	binDir, err := resolveBinDir(ctx, o.BinDir, lg)
	if err != nil {
		return nil, err
	}
	c, err := start(ctx, dir, binDir, o, lg)
	if err != nil {
		if stopErr := Stop(dir); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, err
	}
	return c, nil
}

func start(ctx context.Context, dir, binDir string, o Options, lg logger) (*Cluster, error) {
	began := time.Now()
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	token, kcmToken, err := writeCredentials(dir)
	if err != nil {
		return nil, err
	}

	c := &Cluster{
		Dir:        dir,
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		pids:       map[string]int{},
		procs:      map[string]*process{},
	}
	runIn := func(binDir, name string, args []string, env ...string) (*process, error) {
		p, err := startProcess(dir, binDir, name, args, env, o.Detach)
		if err != nil {
			return nil, err
		}
		c.procs[name] = p
		c.pids[name] = p.pid()
		return p, nil
	}
	run := func(name string, args []string, env ...string) (*process, error) {
		return runIn(binDir, name, args, env...)
	}
	realNode := o.RealNode
	if realNode {
		if err := RealNodeUnavailable(binDir); err != nil {
			lg.printf("no real node: %v", err)
			realNode = false
		}
	}
	// The real node's pods reach the API server at its node address.
	bind := "127.0.0.1"
	if realNode {
		bind = "0.0.0.0"
	}

	lg.printf("starting etcd")
	etcdURL, err := startEtcd(ctx, dir, run)
	if err != nil {
		return nil, err
	}

	lg.printf("starting kube-apiserver")
	c.Server, err = startAPIServer(ctx, dir, etcdURL, token, bind, o.ExtraAPIServerArgs, run)
	if err != nil {
		return nil, err
	}
	if err := writeKubeconfig(ctx, dir, "kubeconfig", c.Server, token); err != nil {
		return nil, err
	}
	const kcmKubeconfig = "kube-controller-manager.kubeconfig"
	if err := writeKubeconfig(ctx, dir, kcmKubeconfig, c.Server, kcmToken); err != nil {
		return nil, err
	}

	lg.printf("starting kube-controller-manager, kube-scheduler and kwok")
	if err := startControllers(dir, c.Kubeconfig, kcmKubeconfig, o, run); err != nil {
		return nil, err
	}

	if realNode {
		port, err := strconv.Atoi(c.Server[strings.LastIndexByte(c.Server, ':')+1:])
		if err != nil {
			return nil, err
		}
		if err := c.startRealNode(ctx, binDir, port, func(binDir, name string, args []string) (*process, error) {
			return runIn(binDir, name, args)
		}, lg); err != nil {
			return nil, err
		}
	}
	if err := c.setUp(ctx, lg, o.Nodes); err != nil {
		return nil, err
	}
	lg.printf("cluster ready in %s (%s)", time.Since(began).Round(100*time.Millisecond), c.Server)
	return c, nil
}

// prepareDir empties what a previous run of the cluster in dir left (its
// real node's mounts too) and makes the folders a new one writes.
func prepareDir(dir string) error {
	if err := cleanUpRealNode(dir); err != nil {
		return err
	}
	for _, sub := range []string{"etcd", "pki", "pids", "kwok", "node"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	for _, sub := range []string{"pki", "pids", "logs", "kwok/home"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// startControllers starts kube-controller-manager, kube-scheduler and kwok
// against the API server of kubeconfig.
func startControllers(dir, kubeconfig, kcmKubeconfig string, o Options, run func(name string, args []string, env ...string) (*process, error)) error {
	kcmArgs := append([]string{
		"--kubeconfig=" + filepath.Join(dir, kcmKubeconfig),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + filepath.Join(dir, "pki", "sa.key"),
		"--root-ca-file=" + filepath.Join(dir, "pki", "apiserver.crt"),
		"--cluster-name=kubectl-sched-sim",
		// Claims of StorageClass HostPathStorageClass get a hostPath
		// volume under /tmp/hostpath_pv on this machine (kube-controller-
		// manager's own test provisioner): the real node's pods share
		// files through it, and kwok's pods only need the claim bound.
		"--enable-hostpath-provisioner",
	}, o.ExtraControllerManagerArgs...)
	if _, err := run("kube-controller-manager", kcmArgs); err != nil {
		return err
	}
	if _, err := run("kube-scheduler", append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	}, o.ExtraSchedulerArgs...)); err != nil {
		return err
	}
	kwokArgs, err := kwokArgs(dir, kubeconfig)
	if err != nil {
		return err
	}
	// HOME points into Dir so kwok does not read the user's ~/.kwok/kwok.yaml.
	_, err = run("kwok", kwokArgs, "HOME="+filepath.Join(dir, "kwok", "home"))
	return err
}

// setUp creates the nodes and waits until the cluster can run pods.
func (c *Cluster) setUp(ctx context.Context, lg logger, nodes []Node) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	lg.printf("ensuring %d nodes exist", len(nodes))
	if err := createNodes(ctx, cfg, nodes); err != nil {
		return err
	}
	want := make([]string, 0, len(nodes)+1)
	for _, n := range nodes {
		want = append(want, n.Name)
	}
	if c.RealNode != "" {
		want = append(want, c.RealNode)
	}
	if err := c.waitNodesReady(ctx, cfg, want, lg); err != nil {
		return err
	}
	if err := c.waitDefaultServiceAccount(ctx, cfg); err != nil {
		return err
	}
	if err := createStorageClass(ctx, cfg); err != nil {
		return err
	}
	// kube-scheduler has no health endpoint here (--secure-port=0); a bad
	// flag or config makes it exit at once, which this catches.
	return c.checkAlive()
}

// checkAlive fails if a component is no longer running; the waits call it so
// that a crash fails fast instead of at the timeout.
func (c *Cluster) checkAlive() error {
	for _, name := range c.components() {
		if p := c.procs[name]; p != nil && p.exited() {
			return componentError(c.Dir, name, fmt.Sprintf("exited (%v)", p.err))
		}
		if !ownedProcess(c.Dir, name, c.pids[name]) {
			return componentError(c.Dir, name, "is not running")
		}
	}
	return nil
}

// components are the processes this cluster runs: the control plane, kwok,
// and the real node's when it has one.
func (c *Cluster) components() []string {
	if c.RealNode == "" {
		return components
	}
	return append(append([]string(nil), components...), realNodeComponents...)
}

func nodeResources(n Node) (corev1.ResourceList, error) {
	cpu, mem, pods := n.CPU, n.Memory, n.Pods
	if cpu == "" {
		cpu = "8"
	}
	if mem == "" {
		mem = "32Gi"
	}
	if pods == 0 {
		pods = 110
	}
	list := corev1.ResourceList{}
	for name, v := range map[string]string{"cpu": cpu, "memory": mem, "pods": fmt.Sprint(pods), "ephemeral-storage": "100Gi"} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("node %s: %s %q: %w", n.Name, name, v, err)
		}
		list[corev1.ResourceName(name)] = q
	}
	for name, v := range n.ExtendedResources {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("node %s: %s %q: %w", n.Name, name, v, err)
		}
		list[corev1.ResourceName(name)] = q
	}
	return list, nil
}

type logger struct{ w io.Writer }

func (l logger) printf(format string, args ...any) {
	if l.w != nil {
		fmt.Fprintf(l.w, "[cluster] "+format+"\n", args...)
	}
}
