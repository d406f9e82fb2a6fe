// Package tour is the guided tour of kubectl-sched on the simulated cluster:
// `make demo` narrates it for a person, and hack/test/e2e runs the same steps and
// asserts what they print. Everything goes through the real binaries: the
// plugin found by the real kubectl on PATH, and the operator as its own
// process with only its generated RBAC (a service-account token).
package tour

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

// Operator identity, as config/rbac creates it.
const (
	OperatorNamespace      = schedv1.DefaultOperatorNamespace
	OperatorServiceAccount = schedv1.OperatorServiceAccount
	// IngressDomain is the domain the tour's operator gives public apps.
	IngressDomain = "apps.local.test"
)

// Env is a running tour: a cluster, the built binaries and the operator.
type Env struct {
	Root       string // repository root
	Dir        string // tour state: binaries, operator kubeconfig and log
	BinDir     string
	Kubeconfig string
	Kubectl    string
	Cluster    *cluster.Cluster
	Log        io.Writer
	// OperatorArgs are added to the operator's command line (a later flag
	// wins: --leader-elect=false).
	OperatorArgs []string
	// OperatorEnv is added to the operator's environment (KEY=VALUE).
	OperatorEnv []string
	// OperatorTags are build tags for the operator: hack/test/chaos builds it
	// with operator/crashpoint's tag, which no release binary has.
	OperatorTags []string

	operator *exec.Cmd
}

// SharedBinDir is the folder tests build the plugin and operator into, one
// per set of operator build tags, outside the repository. go build does
// not link again a binary that is up to date, so the packages of one
// `make test`, and later runs, share one link of each (two large binaries:
// about 20 s of CPU each time).
func SharedBinDir(operatorTags []string) (string, error) {
	variant := "plain"
	if len(operatorTags) > 0 {
		variant = strings.Join(operatorTags, "-")
	}
	d := filepath.Join(cluster.CacheRoot(), "build", variant)
	return d, os.MkdirAll(d, 0o755)
}

// Build compiles kubectl-sched and the operator into e.BinDir. A lock on
// the folder keeps two test packages sharing it from writing one binary at
// once.
func (e *Env) Build(ctx context.Context) error {
	if err := os.MkdirAll(e.BinDir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(e.BinDir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	for name, pkg := range map[string]string{"kubectl-sched": "./plugin", "operator": "./operator"} {
		fmt.Fprintf(e.Log, "building %s\n", name)
		// The release's flags (see the Makefile's CGO_ENABLED and
		// GOFLAGS), so this build and make test's share compiled packages.
		args := []string{"build", "-trimpath", "-o", filepath.Join(e.BinDir, name),
			"-ldflags", "-X github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo.Version=v0.1.0-tour -X main.version=v0.1.0-tour"}
		if name == "operator" && len(e.OperatorTags) > 0 {
			args = append(args, "-tags", strings.Join(e.OperatorTags, ","))
		}
		cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
		cmd.Dir, cmd.Env = e.Root, append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = e.Log, e.Log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", name, err)
		}
	}
	return nil
}

// Environ is the environment commands run with: our binaries first on PATH
// (so `kubectl sched` finds the plugin) and the cluster's kubeconfig.
func (e *Env) Environ() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+e.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+e.Kubeconfig)
}

// KubectlRun runs kubectl ARGS and returns what it printed and its exit code.
func (e *Env) KubectlRun(ctx context.Context, args ...string) (stdout, stderr string, code int, err error) {
	var o, se strings.Builder
	code, err = e.kubectl(ctx, &o, &se, args...)
	return o.String(), se.String(), code, err
}

// KubectlCombined runs kubectl ARGS with stdout and stderr on one pipe, as
// a terminal shows them: in the order the command wrote them (a follow's
// progress lines, on stderr, between its log lines, on stdout). Two pipes
// read by two goroutines would not keep that order.
func (e *Env) KubectlCombined(ctx context.Context, args ...string) (output string, code int, err error) {
	var both strings.Builder
	code, err = e.kubectl(ctx, &both, &both, args...)
	return both.String(), code, err
}

// kubectl runs kubectl ARGS; os/exec gives the command one pipe when
// stdout and stderr are the same writer.
func (e *Env) kubectl(ctx context.Context, stdout, stderr io.Writer, args ...string) (int, error) {
	cmd := exec.CommandContext(ctx, e.Kubectl, args...)
	cmd.Env, cmd.Dir = e.Environ(), e.Root
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// StartOperator runs bin/operator as its own process, authenticated as the
// operator's service account (a token from the TokenRequest API), so it has
// exactly the generated RBAC. Its log goes to Dir/operator.log.
// detach keeps it running after this process exits (the demo).
func (e *Env) StartOperator(ctx context.Context, detach bool) error {
	cfg, err := e.Cluster.RESTConfig()
	if err != nil {
		return err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	tok, err := kc.CoreV1().ServiceAccounts(OperatorNamespace).CreateToken(ctx, OperatorServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for the operator's service account (is the RBAC installed?): %w", err)
	}
	admin, err := clientcmd.LoadFromFile(e.Kubeconfig)
	if err != nil {
		return err
	}
	cur := admin.Contexts[admin.CurrentContext]
	sa := clientcmdapi.NewConfig()
	sa.Clusters["sim"] = admin.Clusters[cur.Cluster]
	sa.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	sa.Contexts["operator"] = &clientcmdapi.Context{Cluster: "sim", AuthInfo: "operator", Namespace: OperatorNamespace}
	sa.CurrentContext = "operator"
	saPath := filepath.Join(e.Dir, "operator.kubeconfig")
	if err := clientcmd.WriteToFile(*sa, saPath); err != nil {
		return err
	}
	probe, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	// Appended to: a restarted operator (the fault tests) keeps the log.
	logf, err := os.OpenFile(filepath.Join(e.Dir, "operator.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + saPath, "--leader-elect", "--leader-election-namespace=" + OperatorNamespace,
		"--health-probe-bind-address=" + probe, "--metrics-bind-address=" + metrics,
		"--ingress-domain=" + IngressDomain}
	e.operator = exec.Command(filepath.Join(e.BinDir, "operator"), append(args, e.OperatorArgs...)...)
	e.operator.Stdout, e.operator.Stderr = logf, logf
	e.operator.Env = append(os.Environ(), e.OperatorEnv...)
	if detach {
		e.operator.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// Killed with us: a test or benchmark killed mid-way leaves no
		// operator acting on a cluster that is gone.
		e.operator.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	if err := startPinned(e.operator); err != nil {
		return err
	}
	// Two minutes: a loaded machine (make test runs packages side by side)
	// has taken more than one to sync the operator's caches. Each probe
	// has its own timeout, so a hanging one does not eat the deadline.
	const readyWithin = 2 * time.Minute
	probeClient := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		if resp, err := probeClient.Get("http://" + probe + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Fprintf(e.Log, "operator ready (pid %d, log %s)\n", e.operator.Process.Pid, logf.Name())
				return nil
			}
		}
		if exited(e.operator.Process.Pid) {
			return fmt.Errorf("%w (pid %d); the end of %s:\n%s", ErrOperatorExited, e.operator.Process.Pid, logf.Name(), tail(logf.Name(), 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the operator did not become ready in %v; the end of %s:\n%s", readyWithin, logf.Name(), tail(logf.Name(), 20))
}

// startPinned starts cmd from a thread kept until the child ends: Linux
// sends Pdeathsig when the thread that forked the child exits, not the
// process, and Go may end a thread at any time otherwise.
func startPinned(cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err != nil {
			return
		}
		for !exited(cmd.Process.Pid) {
			time.Sleep(time.Second)
		}
	}()
	return <-started
}

// ErrOperatorExited is returned when StartOperator's operator ended before it was ready
// (a fault test's crash point may be reached that early); WaitOperatorExit
// says how.
var ErrOperatorExited = errors.New("the operator exited before it was ready")

// exited reports whether the child pid has ended (a zombie until it is
// waited for, which WaitOperatorExit or StopOperator does).
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command's closing parenthesis.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// tail is the last n lines of the file at path, for an error message.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// OperatorPID is the operator's process id, for the demo's closing words.
func (e *Env) OperatorPID() int {
	if e.operator == nil || e.operator.Process == nil {
		return 0
	}
	return e.operator.Process.Pid
}

// KillOperator kills the operator process with SIGKILL, as a crash or an
// OOM kill would: no cleanup, no lease release, writes cut off mid-way.
func (e *Env) KillOperator() error {
	if e.operator == nil || e.operator.Process == nil {
		return nil
	}
	if err := e.operator.Process.Kill(); err != nil {
		return err
	}
	_ = e.operator.Wait()
	return nil
}

// WaitOperatorExit waits up to timeout for the operator to end by itself (a
// fault test's crash point) and returns how it ended.
func (e *Env) WaitOperatorExit(timeout time.Duration) (*os.ProcessState, error) {
	if e.operator == nil || e.operator.Process == nil {
		return nil, fmt.Errorf("no operator running")
	}
	done := make(chan struct{})
	go func() { _ = e.operator.Wait(); close(done) }()
	select {
	case <-done:
		st := e.operator.ProcessState
		e.operator = nil
		return st, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("the operator (pid %d) still runs after %v", e.operator.Process.Pid, timeout)
	}
}

// StopOperator stops the operator process.
func (e *Env) StopOperator() error {
	if e.operator == nil || e.operator.Process == nil {
		return nil
	}
	_ = e.operator.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = e.operator.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = e.operator.Process.Kill()
	}
	return nil
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
