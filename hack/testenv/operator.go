package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// Operator identity in tests: the same names config/rbac uses.
const (
	OperatorNamespace      = schedv1.DefaultOperatorNamespace
	OperatorServiceAccount = schedv1.OperatorServiceAccount
)

// OperatorConfig installs the generated RBAC (config/rbac/role.yaml) bound to
// the operator's service account, and the role it binds itself to in a
// namespace to read pods' logs (config/rbac/pod_logs_role.yaml), and returns admin's config impersonating
// that account. A controller run with it has exactly the permissions the
// markers generate, so a missing one fails the test as it would in a cluster.
func OperatorConfig(ctx context.Context, admin *rest.Config) (*rest.Config, error) {
	c, err := client.New(admin, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: OperatorServiceAccount, Namespace: OperatorNamespace}}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: OperatorServiceAccount, Namespace: OperatorNamespace}
	f, err := os.Open(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("role.yaml: %w", err)
		}
		if raw == nil {
			continue
		}
		if err := applyRole(ctx, c, raw, subject); err != nil {
			return nil, err
		}
	}
	// The role the operator binds itself to where it reads a task's pod's
	// log, bound nowhere here as in a cluster.
	if err := ApplyFile(ctx, c, filepath.Join(root, "config", "rbac", "pod_logs_role.yaml")); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", OperatorNamespace, OperatorServiceAccount),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + OperatorNamespace, "system:authenticated"},
	}
	return cfg, nil
}

// applyRole creates one generated Role or ClusterRole and its binding.
func applyRole(ctx context.Context, c client.Client, raw map[string]any, subject rbacv1.Subject) error {
	data, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	kind, _ := raw["kind"].(string)
	switch kind {
	case "ClusterRole":
		role := &rbacv1.ClusterRole{}
		if err := json.Unmarshal(data, role); err != nil {
			return err
		}
		if err := createOrUpdate(ctx, c, role); err != nil {
			return err
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{subject},
		}
		return createOrUpdate(ctx, c, binding)
	case "Role":
		role := &rbacv1.Role{}
		if err := json.Unmarshal(data, role); err != nil {
			return err
		}
		// Generated Roles name the operator's namespace or the scheduler
		// namespace, which install creates (privileged); tests use both.
		if role.Namespace != schedv1.DefaultSchedulerNamespace {
			role.Namespace = OperatorNamespace
		} else {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: role.Namespace,
				Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}
			if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		if err := createOrUpdate(ctx, c, role); err != nil {
			return err
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: role.Namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{subject},
		}
		return createOrUpdate(ctx, c, binding)
	default:
		return fmt.Errorf("role.yaml holds an unexpected %q", kind)
	}
}

// createOrUpdate creates obj, or replaces an existing one with the same name.
func createOrUpdate(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return err
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	return c.Update(ctx, obj)
}

// FreeAddr returns a free loopback address for a test server.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// StartOperator runs the operator's manager, as main.go builds it, with the
// operator's RBAC only (see OperatorConfig). Metrics and probes bind to free
// loopback ports; leader election is off unless mutate turns it on. The
// returned stop waits for the manager to exit. KUBECTL_SCHED_TEST_LOG=1
// sends the operator's log to stderr.
func StartOperator(ctx context.Context, admin *rest.Config, mutate func(*app.Options)) (stop func() error, opts app.Options, err error) {
	cfg, err := OperatorConfig(ctx, admin)
	if err != nil {
		return nil, opts, fmt.Errorf("operator RBAC: %w", err)
	}
	if os.Getenv("KUBECTL_SCHED_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.ConsoleEncoder(func(c *zapcore.EncoderConfig) { c.EncodeTime = zapcore.RFC3339NanoTimeEncoder })))
	} else {
		// Quiet, and without controller-runtime's stack trace warning that
		// no logger was set.
		ctrl.SetLogger(logr.Discard())
	}
	opts = app.DefaultOptions()
	if opts.MetricsAddr, err = FreeAddr(); err != nil {
		return nil, opts, err
	}
	if opts.ProbeAddr, err = FreeAddr(); err != nil {
		return nil, opts, err
	}
	opts.LeaderElectionNamespace = OperatorNamespace
	// Tests read metrics over plain HTTP; TestMetricsNeedAToken turns
	// secure serving back on.
	opts.MetricsSecure = false
	if mutate != nil {
		mutate(&opts)
	}
	mgr, err := app.NewManager(cfg, opts)
	if err != nil {
		return nil, opts, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		err := <-done
		if err != nil && strings.Contains(err.Error(), "context canceled") {
			return nil
		}
		return err
	}, opts, nil
}
