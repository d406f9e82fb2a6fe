package testenv

import (
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// WriteKubeconfig adds user to the control plane and writes a kubeconfig
// for them at path, for tests that run kubectl or the plugin as a process
// or with --kubeconfig.
func WriteKubeconfig(cp *envtest.ControlPlane, path string, user envtest.User) error {
	u, err := cp.AddUser(user, nil)
	if err != nil {
		return err
	}
	data, err := u.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Admin is a user in system:masters.
func Admin(name string) envtest.User {
	return envtest.User{Name: name, Groups: []string{"system:masters"}}
}

// AdminKubeconfig writes an admin kubeconfig in a folder the test removes.
func AdminKubeconfig(t interface {
	TempDir() string
	Fatal(...any)
}, cp *envtest.ControlPlane, name string) string {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(cp, path, Admin(name)); err != nil {
		t.Fatal(err)
	}
	return path
}
