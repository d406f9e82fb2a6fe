package cluster

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Restart stops one component of a cluster this process started (etcd,
// kube-apiserver, ...), keeps it down for down, and starts it again with the
// same arguments; for etcd and the API server it returns once the API
// server answers /readyz again. The fault tests use it.
func (c *Cluster) Restart(ctx context.Context, name string, down time.Duration) error {
	p := c.procs[name]
	if p == nil {
		return fmt.Errorf("cluster: %s was not started by this process", name)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return ctx.Err()
	}
	np, err := startProcess(c.Dir, p.binDir, name, p.args, p.env, p.detach)
	if err != nil {
		return err
	}
	c.procs[name], c.pids[name] = np, np.pid()
	if name != "etcd" && name != "kube-apiserver" {
		return nil
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}
