package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// components in start order; Stop goes backwards.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

const (
	stopGrace = 15 * time.Second
	logTail   = 20
)

// process is a component started by this process.
type process struct {
	name string
	cmd  *exec.Cmd
	// How it was started, so Cluster.Restart can start it again.
	binDir    string
	args, env []string
	detach    bool
	done      chan struct{} // closed once the process has exited and been reaped
	err       error         // exit error, valid after done
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startProcess starts binDir/name with its output in dir/logs/name.log and
// records its pid in dir/pids/name.pid.
func startProcess(dir, binDir, name string, args, env []string, detach bool) (*process, error) {
	logFile, err := os.OpenFile(logPath(dir, name), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own session: a Ctrl-C in the terminal that ran "localcluster up" does
	// not reach the cluster.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if !detach {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), binDir: binDir, args: args, env: env, detach: detach}

	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked the child exits, not
		// the process; pin this goroutine to its thread until the child
		// is gone.
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err != nil {
			logFile.Close()
			return
		}
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	pidFile := filepath.Join(dir, "pids", name+".pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(p.pid())+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	return p, nil
}

func logPath(dir, name string) string { return filepath.Join(dir, "logs", name+".log") }

func readPID(dir, name string) int {
	b, err := os.ReadFile(filepath.Join(dir, "pids", name+".pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

func hasPIDs(dir string) bool {
	for _, name := range components {
		if readPID(dir, name) != 0 {
			return true
		}
	}
	return false
}

// ownedProcess reports whether pid is a live process running binary name
// with dir on its command line, so a pid reused by something else after a
// reboot or crash is never taken for ours.
func ownedProcess(dir, name string, pid int) bool {
	if pid <= 0 || !alive(pid) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) == 0 || filepath.Base(args[0]) != name {
		return false
	}
	for _, a := range args[1:] {
		if strings.Contains(a, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces or parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// Stop stops the cluster whose state is in dir: only processes whose pids are
// recorded in dir/pids and whose command line shows they belong to dir. Each
// gets SIGTERM, then SIGKILL if still running after a grace period. Clients
// stop before kube-apiserver, and kube-apiserver before etcd. State files are
// kept for the logs; Start reuses the folder.
func Stop(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var errs []error
	// The real node's pods, mounts, NAT rule and cgroups go once its
	// kubelet and containerd have stopped.
	stages := [][]string{{"kubelet", "kwok", "kube-scheduler", "kube-controller-manager"}, {"containerd"}, {"kube-apiserver"}, {"etcd"}}
	for _, stage := range stages {
		var pids []int
		for _, name := range stage {
			pid := readPID(dir, name)
			if ownedProcess(dir, name, pid) {
				if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
					errs = append(errs, fmt.Errorf("stop %s (pid %d): %w", name, pid, err))
				}
				pids = append(pids, pid)
			}
		}
		if left := waitGone(pids, stopGrace); len(left) > 0 {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if left := waitGone(left, 5*time.Second); len(left) > 0 {
				errs = append(errs, fmt.Errorf("processes %v in %s survived SIGKILL", left, dir))
			}
		}
		for _, name := range stage {
			_ = os.Remove(filepath.Join(dir, "pids", name+".pid"))
		}
		if stage[0] == "containerd" {
			if err := cleanUpRealNode(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// waitGone waits until the processes exit and returns those still alive.
func waitGone(pids []int, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lockDir serialises Starts on one folder (two "localcluster up" at once).
// The lock goes with the process, so a crash cannot leave it held.
func lockDir(ctx context.Context, dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another Start in %s: %w", dir, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// componentError describes a failed component with the end of its log.
func componentError(dir, name, what string) error {
	path := logPath(dir, name)
	return fmt.Errorf("%s %s (log: %s)\n%s", name, what, path, tail(path, logTail))
}

// tail returns the last n lines of a file, indented.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "    (no log: " + err.Error() + ")"
	}
	defer f.Close()
	const max = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, 0)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString("    " + l + "\n")
	}
	return strings.TrimRight(buf.String(), "\n")
}
