package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The real node: a kubelet built from the control plane's release, with
// containerd, runc and CNI bridge networking from Debian's packages, beside
// the kwok nodes. It is node pool "real" and tainted with the pool, so only
// pods that name the pool (placement.nodePools: [real]) land there.
const (
	RealNodeName = "real-node"
	RealNodePool = "real"
	// TaintPool is the taint a reserved pool's nodes carry (value: the
	// pool); placement tolerates it for the pools a workload names.
	TaintPool = LabelPool
	// kubernetesServiceIP is the first address of the API server's
	// --service-cluster-ip-range: the "kubernetes" Service.
	kubernetesServiceIP = "10.96.0.1"
)

// realNodeComponents start after the control plane; Stop stops the kubelet
// with the other clients and containerd once the pods are gone.
var realNodeComponents = []string{"containerd", "kubelet"}

// Host programs the real node needs (hack/install-node-packages.sh).
var (
	cniDir  = "/usr/lib/cni"
	busybox = "/bin/busybox"
)

// realNode is what Stop needs to undo a real node; saved in dir/node.
type realNode struct {
	Name       string   `json:"name"`
	IP         string   `json:"ip"`
	CgroupRoot string   `json:"cgroupRoot"`
	Bridge     string   `json:"bridge"`
	Subnet     string   `json:"subnet"`
	Socket     string   `json:"socket"`
	NATRule    []string `json:"natRule"`
}

// RealNodeUnavailable says why this host cannot run the real node, or nil.
// The tests that need it skip with this reason; "make cluster-up" prints it
// and starts the kwok nodes only.
func RealNodeUnavailable(binDir string) error {
	var missing []string
	if os.Geteuid() != 0 {
		return errors.New("the real node needs root (containerd, runc and cgroups); this process runs as uid " + strconv.Itoa(os.Geteuid()))
	}
	for _, prog := range []string{"containerd", "runc", "ctr", "iptables"} {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, prog)
		}
	}
	for _, f := range []string{filepath.Join(cniDir, "bridge"), filepath.Join(cniDir, "host-local"), filepath.Join(cniDir, "loopback"), busybox} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: run hack/install-node-packages.sh (Debian's containerd, runc, containernetworking-plugins, busybox-static, iptables)", strings.Join(missing, ", "))
	}
	if binDir != "" {
		if _, err := os.Stat(filepath.Join(binDir, "kubelet")); err != nil {
			return fmt.Errorf("no kubelet in %s: run hack/build-control-plane.sh", binDir)
		}
	}
	if _, err := nodeIP(); err != nil {
		return err
	}
	return nil
}

// nodeIP is the first non-loopback IPv4 address: the kubelet refuses a
// loopback --node-ip, and the API server dials it for logs.
func nodeIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || strings.HasPrefix(iface.Name, "kss") {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", errors.New("the real node needs a non-loopback IPv4 address for --node-ip; this host has none")
}

func nodeDir(dir string) string { return filepath.Join(dir, "node") }

// newRealNode derives per-cluster names from dir, so two clusters on one
// host do not share a bridge, subnet or cgroup.
func newRealNode(dir string) (*realNode, error) {
	ip, err := nodeIP()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(dir))
	h := hex.EncodeToString(sum[:4])
	return &realNode{
		Name:       RealNodeName,
		IP:         ip,
		CgroupRoot: "/kubectl-sched-" + h,
		Bridge:     "kss" + h,
		Subnet:     fmt.Sprintf("10.200.%d.0/24", int(sum[4])%250),
		Socket:     filepath.Join(nodeDir(dir), "containerd", "containerd.sock"),
	}, nil
}

func (n *realNode) save(dir string) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(nodeDir(dir), "realnode.json"), b, 0o644)
}

func loadRealNode(dir string) *realNode {
	b, err := os.ReadFile(filepath.Join(nodeDir(dir), "realnode.json"))
	if err != nil {
		return nil
	}
	n := &realNode{}
	if json.Unmarshal(b, n) != nil {
		return nil
	}
	return n
}

// startRealNode starts containerd, imports the images, and starts the
// kubelet; setUp waits for the node to be Ready.
func (c *Cluster) startRealNode(ctx context.Context, binDir string, apiPort int, run func(binDir, name string, args []string) (*process, error), lg logger) error {
	nd := nodeDir(c.Dir)
	n, err := newRealNode(c.Dir)
	if err != nil {
		return err
	}
	for _, sub := range []string{"containerd", "cni/net.d", "bin", "kubelet/pki", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(nd, sub), 0o755); err != nil {
			return err
		}
	}
	if err := n.save(c.Dir); err != nil {
		return err
	}
	if err := writeRealNodeFiles(nd, n); err != nil {
		return err
	}
	if err := makeCgroupRoot(n.CgroupRoot); err != nil {
		return err
	}

	lg.printf("starting containerd for the real node")
	containerd, _ := exec.LookPath("containerd")
	p, err := run(filepath.Dir(containerd), "containerd", []string{"--config", filepath.Join(nd, "containerd", "config.toml")})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, c.Dir, p, 30*time.Second, func(ctx context.Context) error {
		return exec.CommandContext(ctx, "ctr", "--address", n.Socket, "version").Run()
	}); err != nil {
		return err
	}
	if err := c.importBaseImages(ctx, n); err != nil {
		return err
	}

	// Pods reach the API server as in-cluster clients do, at the
	// kubernetes Service's address. There is no kube-proxy: one DNAT rule,
	// for this node's pods only, stands in for it.
	n.NATRule = []string{"PREROUTING", "-t", "nat", "-s", n.Subnet, "-d", kubernetesServiceIP, "-p", "tcp", "--dport", "443",
		"-j", "DNAT", "--to-destination", fmt.Sprintf("%s:%d", n.IP, apiPort)}
	if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-A"}, n.NATRule...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables: %v: %s", err, out)
	}
	if err := n.save(c.Dir); err != nil {
		return err
	}

	lg.printf("starting the kubelet of %s (%s)", n.Name, n.IP)
	if _, err := run(binDir, "kubelet", []string{
		"--config=" + filepath.Join(nd, "kubelet", "config.yaml"),
		"--kubeconfig=" + c.Kubeconfig,
		"--root-dir=" + filepath.Join(nd, "kubelet"),
		"--cert-dir=" + filepath.Join(nd, "kubelet", "pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP,
		"--node-labels=" + LabelPool + "=" + RealNodePool + "," + LabelZone + "=zone-a",
		"--v=1",
	}); err != nil {
		return err
	}
	c.RealNode = n.Name
	return nil
}

// importBaseImages imports busybox (under BusyboxImages) and the pause image.
func (c *Cluster) importBaseImages(ctx context.Context, n *realNode) error {
	images := map[string]v1.Image{}
	bb, err := busyboxImage(busybox, nil)
	if err != nil {
		return err
	}
	for _, tag := range BusyboxImages {
		images[tag] = bb
	}
	// The pause image only has to wait; busybox sleep does.
	pause, err := busyboxImage(busybox, []string{"/bin/sleep", "2147483647"})
	if err != nil {
		return err
	}
	images[PauseImage] = pause
	return c.importArchive(ctx, n.Socket, "base", images)
}

// ImportBinaryImage imports, as ref, an image holding only the static
// binary at path, as /NAME its entrypoint, run as the non-root user: the
// operator's binary as the tools image of its tasks' helpers.
func (c *Cluster) ImportBinaryImage(ctx context.Context, ref, path string) error {
	n := loadRealNode(c.Dir)
	if n == nil || c.RealNode == "" {
		return errors.New("cluster: no real node")
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	name := filepath.Base(path)
	l := newLayer()
	l.file(name, bin, 0o755)
	img, err := l.image([]string{"/" + name}, nonRootUID, nil)
	if err != nil {
		return err
	}
	return c.importArchive(ctx, n.Socket, "binary-"+name, map[string]v1.Image{ref: img})
}

// RealNodeIP is the real node's address, which is this host's: a server
// the tests start on it is what the node's pods reach.
func (c *Cluster) RealNodeIP() (string, error) {
	n := loadRealNode(c.Dir)
	if n == nil || c.RealNode == "" {
		return "", errors.New("cluster: no real node")
	}
	return n.IP, nil
}

// TrustRegistry lets the real node's containerd pull from the plain-HTTP
// registry at host (host:port), as a test's local registry: containerd
// pulls on the host's network, so a loopback address works. It reads the
// hosts folder on every pull; nothing restarts.
func (c *Cluster) TrustRegistry(host string) error {
	if loadRealNode(c.Dir) == nil || c.RealNode == "" {
		return errors.New("cluster: no real node")
	}
	dir := filepath.Join(nodeDir(c.Dir), "containerd", "certs.d", host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hosts := fmt.Sprintf("server = \"http://%[1]s\"\n\n[host.\"http://%[1]s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", host)
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644)
}

func (c *Cluster) importArchive(ctx context.Context, socket, name string, images map[string]v1.Image) error {
	path := filepath.Join(nodeDir(c.Dir), name+".tar")
	if err := writeArchive(path, images); err != nil {
		return fmt.Errorf("image archive: %w", err)
	}
	defer os.Remove(path)
	out, err := exec.CommandContext(ctx, "ctr", "--address", socket, "-n", "k8s.io", "images", "import", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import: %v: %s", err, out)
	}
	return nil
}

// writeRealNodeFiles writes containerd's config, the runc wrapper, the CNI
// network and the kubelet's config.
func writeRealNodeFiles(nd string, n *realNode) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return err
	}
	files := map[string]string{
		"containerd/config.toml": fmt.Sprintf(containerdConfig, nd, PauseImage, filepath.Join(nd, "bin", "runc"), cniDir),
		// These machines refuse a negative oom_score_adj, even to root, and
		// the kubelet asks for one on every pod sandbox (-998) and
		// Guaranteed container (-997): runc then fails with "can't get
		// final child's PID from pipe". The wrapper clamps it to 0. It is a
		// quirk of this sandbox, not of Kubernetes, so it lives in the test
		// harness only. It also opens the directories of kube-controller-
		// manager's host-path provisioner (HostPathStorageClass) that a
		// container mounts: that test provisioner makes them root-owned
		// and 0750, and the kubelet applies no fsGroup to a hostPath
		// volume, so the restricted pods' non-root user could not write
		// them, as it can a volume of a provisioner that honours fsGroup.
		"bin/runc":                            fmt.Sprintf(runcWrapper, runc),
		"cni/net.d/10-kubectl-sched.conflist": fmt.Sprintf(cniConfig, n.Bridge, n.Subnet, filepath.Join(nd, "cni", "ipam")),
		"kubelet/config.yaml": fmt.Sprintf(kubeletConfig, n.CgroupRoot, n.Socket, freePort(), freePort(),
			filepath.Join(nd, "pod-logs"), TaintPool, RealNodePool),
	}
	for name, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(nd, name), []byte(body), mode); err != nil {
			return err
		}
	}
	return nil
}

const containerdConfig = `version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
[grpc]
  address = "%[1]s/containerd/containerd.sock"
[ttrpc]
  address = "%[1]s/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[2]s"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "%[3]s"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "%[4]s"
    conf_dir = "%[1]s/cni/net.d"
  # One folder per registry host (TrustRegistry), read on every pull.
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "%[1]s/containerd/certs.d"
`

const runcWrapper = `#!/bin/sh
# Clamps a negative process.oomScoreAdj to 0, opens the host-path
# provisioner's volumes to the pod's non-root user, then runs runc (see
# hack/cluster/realnode.go: these machines refuse negative values).
prev=""
for a in "$@"; do
  case "$prev" in
    --bundle|-b) f="$a/config.json" ;;
    --process|-p) f="$a" ;;
    *) f="" ;;
  esac
  case "$a" in
    --bundle=*) f="${a#--bundle=}/config.json" ;;
    --process=*) f="${a#--process=}" ;;
  esac
  if [ -n "$f" ] && [ -f "$f" ]; then
    sed -i 's/"oomScoreAdj":-[0-9]*/"oomScoreAdj":0/' "$f"
    for d in $(grep -o '"source":"/tmp/hostpath_pv/[^"]*"' "$f" | cut -d'"' -f4); do
      chmod 0777 "$d"
    done
  fi
  prev="$a"
done
exec %s "$@"
`

const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": "kubectl-sched",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "%s",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "%s"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "%s"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

// kubeletConfig is for a test node only: anonymous access with AlwaysAllow
// on its API, and no eviction or image garbage collection (the imported
// images cannot be pulled again).
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# 1.35+ refuses cgroup v1 unless told; with containerd 1.x the kubelet uses
# this driver (the fallback goes away in 1.38, which needs containerd 2.x).
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %s
containerRuntimeEndpoint: unix://%s
failSwapOn: false
enforceNodeAllocatable: []
resolvConf: ""
port: %d
readOnlyPort: 0
healthzPort: %d
healthzBindAddress: 127.0.0.1
podLogsDir: %s
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerWithTaints:
  - key: %s
    value: %s
    effect: NoSchedule
`

// cgroupHierarchies are the mounted cgroup v1 hierarchies, or the v2 root.
func cgroupHierarchies() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 {
			out = append(out, p)
		}
	}
	return out
}

// makeCgroupRoot creates the kubelet's --cgroup-root in every hierarchy
// (the kubelet requires that it exists).
func makeCgroupRoot(root string) error {
	for _, h := range cgroupHierarchies() {
		if err := os.MkdirAll(filepath.Join(h, root), 0o755); err != nil {
			return fmt.Errorf("cgroup root: %w", err)
		}
	}
	return nil
}

// killPods kills every process in the real node's cgroups (containers and
// pod sandboxes), then the containerd shims of its socket. The kubelet and
// containerd leave containers running when they stop.
func killPods(n *realNode) {
	for _, h := range cgroupHierarchies() {
		root := filepath.Join(h, n.CgroupRoot)
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(b, []byte("containerd-shim")) || !bytes.Contains(b, []byte(n.Socket)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(200 * time.Millisecond)
}

// cleanUpRealNode undoes what a real node left on the host once its
// processes are gone: mounts under dir/node, the NAT rule, the bridge and
// the cgroups.
func cleanUpRealNode(dir string) error {
	n := loadRealNode(dir)
	if n == nil {
		return nil
	}
	killPods(n)
	var errs []error
	if err := unmountUnder(nodeDir(dir)); err != nil {
		errs = append(errs, err)
	}
	if len(n.NATRule) > 0 {
		_ = exec.Command("iptables", append([]string{"-D"}, n.NATRule...)...).Run()
	}
	if _, err := exec.LookPath("ip"); err == nil {
		_ = exec.Command("ip", "link", "delete", n.Bridge).Run()
	}
	for _, h := range cgroupHierarchies() {
		removeCgroupTree(filepath.Join(h, n.CgroupRoot))
	}
	if err := os.Remove(filepath.Join(nodeDir(dir), "realnode.json")); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount below path, deepest first.
func unmountUnder(path string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var mounts []string
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 {
			mp := unescapeMount(fields[4])
			if strings.HasPrefix(mp, path+"/") {
				mounts = append(mounts, mp)
			}
		}
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, mp := range mounts {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				out.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}

// removeCgroupTree removes a cgroup and its children, leaves first.
func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, d := range dirs {
		_ = syscall.Rmdir(d)
	}
}
