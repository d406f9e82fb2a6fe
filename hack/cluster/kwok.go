package cluster

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

// stages are kwok Stage objects: what happens to fake nodes and to pods on
// them. Each file starts with a comment saying what it does.
//
//go:embed kwok/*.yaml
var stages embed.FS

// kwokArgs writes the stages into dir/kwok and returns kwok's flags.
//
// kwok serves nothing (no kubelet API, metrics or port forwarding) unless
// given --server-address or --node-port, so two clusters never collide.
func kwokArgs(dir, kubeconfig string) ([]string, error) {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		// kwok renews a Lease per node, as kubelets do; the node-lifecycle
		// controller then does not depend on status heartbeats alone.
		"--node-lease-duration-seconds=40",
		// Pod IPs; the default /24 runs out at 254 pods.
		"--cidr=10.244.0.0/16",
	}
	files, err := fs.Glob(stages, "kwok/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := stages.ReadFile(f)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--config="+path)
	}
	return args, nil
}
