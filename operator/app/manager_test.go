package app_test

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-sched/kubectl-sched/api/settings"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// TestManagerBecomesReadyAndLeads starts the manager as main.go does, against
// a real API server, and waits for /readyz and the leader Lease.
func TestManagerBecomesReadyAndLeads(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	// The operator runs with only its generated RBAC: taking the Lease and
	// syncing the caches fail here if a marker is missing.
	ctx := context.Background()
	stop, opts, err := testenv.StartOperator(ctx, env.Config, func(o *app.Options) { o.LeaderElect = true })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("manager stopped with an error: %v", err)
		}
	})

	testenv.EventuallyWithin(t, testenv.ShortTimeout, "readyz to answer 200", func(context.Context) error {
		return httpOK("http://" + opts.ProbeAddr + "/readyz")
	})
	if err := httpOK("http://" + opts.ProbeAddr + "/healthz"); err != nil {
		t.Errorf("healthz: %v", err)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the leader Lease to be held", func(context.Context) error {
		var lease coordinationv1.Lease
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: testenv.OperatorNamespace, Name: opts.LeaderElectionID}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		return nil
	})
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "metrics to be served", func(context.Context) error {
		return httpOK("http://" + opts.MetricsAddr + "/metrics")
	})
	// Each controller's queue (fair across namespaces) reports under
	// controller-runtime's names, and the client's rate limiter its waits.
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the queues' and the rate limiter's metrics", func(context.Context) error {
		m, err := testenv.ScrapeMetrics(ctx, "http://"+opts.MetricsAddr+"/metrics")
		if err != nil {
			return err
		}
		for _, c := range settings.Controllers {
			if len(m.By("workqueue_adds_total", map[string]string{"name": c, "controller": c})) == 0 {
				return fmt.Errorf("no workqueue_adds_total of controller %s", c)
			}
		}
		if m.Sum("rest_client_rate_limiter_duration_seconds_count", nil) == 0 {
			return fmt.Errorf("no rest_client_rate_limiter_duration_seconds")
		}
		return nil
	})
}

func TestOptionsFromEnvironment(t *testing.T) {
	cases := map[string]struct {
		args    []string
		env     map[string]string
		want    func(o *app.Options)
		wantErr string
		// wantTools is the tools image the controllers get, when given.
		wantTools string
	}{
		"defaults": {},
		"environment fills unset flags": {
			env: map[string]string{"INGRESS_DOMAIN": "apps.local", "NETWORK_POLICIES": "false", "SCHEDULER_IMAGES": "scx_lavd=reg/lavd:1", "MAX_CONCURRENT_RECONCILES": "3"},
			want: func(o *app.Options) {
				o.Settings.IngressDomain = "apps.local"
				o.Settings.NetworkPolicies = false
				o.Settings.SchedulerImages["scx_lavd"] = "reg/lavd:1"
				o.Settings.MaxConcurrentReconciles = 3
			},
		},
		"the tools image is the operator's own unless set": {
			env:       map[string]string{"OPERATOR_IMAGE": "reg/operator@sha256:abc"},
			want:      func(o *app.Options) { o.OperatorImage = "reg/operator@sha256:abc" },
			wantTools: "reg/operator@sha256:abc",
		},
		"a tools image of its own": {
			env: map[string]string{"OPERATOR_IMAGE": "reg/operator@sha256:abc", "TOOLS_IMAGE": "mirror/tools:1"},
			want: func(o *app.Options) {
				o.OperatorImage, o.Settings.ToolsImage = "reg/operator@sha256:abc", "mirror/tools:1"
			},
			wantTools: "mirror/tools:1",
		},
		"a tools image flag wins over both": {
			args: []string{"--tools-image=flag/tools:2"},
			env:  map[string]string{"OPERATOR_IMAGE": "reg/operator@sha256:abc", "TOOLS_IMAGE": "mirror/tools:1"},
			want: func(o *app.Options) {
				o.OperatorImage, o.Settings.ToolsImage = "reg/operator@sha256:abc", "flag/tools:2"
			},
			wantTools: "flag/tools:2",
		},
		"a flag wins over the environment": {
			args: []string{"--ingress-domain=flag.example"},
			env:  map[string]string{"INGRESS_DOMAIN": "env.example"},
			want: func(o *app.Options) { o.Settings.IngressDomain = "flag.example" },
		},
		"the seed's names": {
			env: map[string]string{"DEPLOYMENT_DOMAIN": "apps.seed", "DISABLE_NETWORK_POLICIES": "true"},
			want: func(o *app.Options) {
				o.Settings.IngressDomain = "apps.seed"
				o.Settings.NetworkPolicies = false
			},
		},
		"ours win over the seed's names": {
			env:  map[string]string{"DEPLOYMENT_DOMAIN": "apps.seed", "INGRESS_DOMAIN": "apps.ours", "DISABLE_NETWORK_POLICIES": "true", "NETWORK_POLICIES": "true"},
			want: func(o *app.Options) { o.Settings.IngressDomain = "apps.ours" },
		},
		"a flag wins over the seed's names": {
			args: []string{"--network-policies=true"},
			env:  map[string]string{"DISABLE_NETWORK_POLICIES": "true"},
		},
		"bad seed bool": {
			env:     map[string]string{"DISABLE_NETWORK_POLICIES": "yes please"},
			wantErr: `DISABLE_NETWORK_POLICIES="yes please" is not true or false`,
		},
		"fairness off, for comparison": {
			env:  map[string]string{"NAMESPACE_FAIRNESS": "false"},
			want: func(o *app.Options) { o.Settings.NamespaceFairness = false },
		},
		"monitoring namespace": {
			env:  map[string]string{"MONITORING_NAMESPACE": "prometheus"},
			want: func(o *app.Options) { o.Settings.MonitoringNamespace = "prometheus" },
		},
		"bad number": {
			env:     map[string]string{"MAX_CONCURRENT_RECONCILES": "many"},
			wantErr: `MAX_CONCURRENT_RECONCILES="many" is not a whole number`,
		},
		"leader election timings out of order": {
			args:    []string{"--leader-elect-renew-deadline=20s"},
			wantErr: "leader election needs 0 < --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration, got 2s, 20s, 15s",
		},
		"allowed ingress classes": {
			env:  map[string]string{"ALLOWED_INGRESS_CLASSES": "internal, nginx-public"},
			want: func(o *app.Options) { o.Settings.AllowedIngressClasses = []string{"internal", "nginx-public"} },
		},
		"bad allowed ingress class": {
			args:    []string{"--allowed-ingress-classes=nginx,Bad_Class"},
			wantErr: `--allowed-ingress-classes: "Bad_Class" is not an IngressClass name (a lower-case DNS name)`,
		},
		"no graceful shutdown": {
			args:    []string{"--graceful-shutdown-timeout=0s"},
			wantErr: "--graceful-shutdown-timeout must be positive, got 0s",
		},
		"reserved paths of the store": {
			env:  map[string]string{"EXTERNAL_SECRET_RESERVED_PATHS": " kv/ , shared,,"},
			want: func(o *app.Options) { o.Settings.ExternalSecretReservedPaths = []string{"kv", "shared"} },
		},
		"no key template confines nothing": {
			env:  map[string]string{"EXTERNAL_SECRET_KEY_TEMPLATE": ""},
			want: func(o *app.Options) { o.Settings.ExternalSecretKeyTemplate = "" },
		},
		"a key template without a trailing slash": {
			args:    []string{"--external-secret-key-template={{namespace}}"},
			wantErr: `--external-secret-key-template "{{namespace}}" must end in /, so that no namespace's prefix is the start of another namespace's keys (with {{namespace}} alone, namespace team could read team-b's); use "{{namespace}}/"`,
		},
		"a key template every namespace shares": {
			env:     map[string]string{"EXTERNAL_SECRET_KEY_TEMPLATE": "apps/"},
			wantErr: `--external-secret-key-template "apps/" must hold {{namespace}}, so each namespace gets a part of the store of its own (the default is {{namespace}}/)`,
		},
		"scale settings from the environment": {
			env: map[string]string{"KUBE_API_QPS": "150.5", "KUBE_API_BURST": "300", "CONTROLLER_WORKERS": "workflow=20, agenttask=30",
				"NAMESPACE_SELECTOR": "sched.kubectl-sched.dev/tier", "DEFAULT_TTL": "24h", "SUCCEEDED_POD_RETENTION": "0s"},
			want: func(o *app.Options) {
				o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst = 150.5, 300
				o.Settings.ControllerWorkers = map[string]string{"workflow": "20", "agenttask": "30"}
				o.Settings.NamespaceSelector = "sched.kubectl-sched.dev/tier"
				o.Settings.DefaultTTL, o.Settings.SucceededPodRetention = 24*time.Hour, 0
			},
		},
		"empty numbers in the ConfigMap keep the defaults": {
			env: map[string]string{"KUBE_API_QPS": "", "MAX_CONCURRENT_RECONCILES": "", "DEFAULT_TTL": "", "CONTROLLER_WORKERS": ""},
		},
		"workers of one controller by flag": {
			args: []string{"--controller-workers=workflow=20", "--controller-workers=agenttask=5"},
			want: func(o *app.Options) {
				o.Settings.ControllerWorkers = map[string]string{"workflow": "20", "agenttask": "5"}
			},
		},
		"workers of an unknown controller": {
			args:    []string{"--controller-workers=workflows=20"},
			wantErr: `--controller-workers workflows=20: "workflows" is not a controller (agenttask, cronworkflow, schedext, tenant, userdeployment, workflow)`,
		},
		"no workers": {
			env:     map[string]string{"CONTROLLER_WORKERS": "workflow=0"},
			wantErr: "--controller-workers workflow=0: give a whole number of workers of 1 or more",
		},
		"bad namespace selector": {
			args:    []string{"--namespace-selector=tier in (free"},
			wantErr: `--namespace-selector "tier in (free" is not a label selector: unable to parse requirement: found '', expected: ',' or ')'`,
		},
		"negative TTL": {
			args:    []string{"--default-ttl=-1h"},
			wantErr: "--default-ttl and --succeeded-pod-retention must be 0 or more, got -1h0m0s and 10m0s",
		},
		"bad duration": {
			env:     map[string]string{"SUCCEEDED_POD_RETENTION": "ten minutes"},
			wantErr: `SUCCEEDED_POD_RETENTION="ten minutes" is not a duration (10m, 168h)`,
		},
		"bad provider": {
			args:    []string{"--ingress-provider=nginx"},
			wantErr: `--ingress-provider must be ingress or traefik, got "nginx"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := app.DefaultOptions()
			fs := flag.NewFlagSet("operator", flag.ContinueOnError)
			got.BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := got.ApplyEnv(fs, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := app.DefaultOptions()
			if tc.want != nil {
				tc.want(&want)
			}
			// Unexported fields are what setupControllers shares between
			// controllers, not options.
			if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(app.Options{})); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if tc.wantTools != "" && got.ToolsImage() != tc.wantTools {
				t.Errorf("tools image %q, want %q", got.ToolsImage(), tc.wantTools)
			}
		})
	}
}

// TestControllerWorkersNameEveryController: --controller-workers, which
// install checks against settings.Controllers, names each controller the
// manager runs, and each gets its own count.
func TestControllerWorkersNameEveryController(t *testing.T) {
	if diff := cmp.Diff(settings.Controllers, app.ControllerNames()); diff != "" {
		t.Errorf("settings.Controllers differ from the manager's (-settings +manager):\n%s", diff)
	}
	o := app.DefaultOptions()
	o.Settings.ControllerWorkers = map[string]string{"workflow": "20"}
	if got := o.Workers("workflow"); got != 20 {
		t.Errorf("workflow workers = %d, want 20", got)
	}
	if got := o.Workers("agenttask"); got != o.Settings.MaxConcurrentReconciles {
		t.Errorf("agenttask workers = %d, want --max-concurrent-reconciles (%d)", got, o.Settings.MaxConcurrentReconciles)
	}
}

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

// TestMetricsNeedAToken: as shipped, metrics are served over HTTPS only to
// callers the API server says may get /metrics: no token is refused, a
// token without kubectl-sched-metrics-reader is forbidden, one with it
// scrapes. HTTP/2 is off.
func TestMetricsNeedAToken(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	stop, opts, err := testenv.StartOperator(ctx, env.Config, func(o *app.Options) { o.MetricsSecure = true })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })

	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.ApplyFile(ctx, env.Client, filepath.Join(root, "config", "rbac", "metrics_reader_role.yaml")); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	token := func(name string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	prometheus, stranger := token("prometheus"), token("stranger")
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubectl-sched-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The certificate is self-signed; the test checks access, not trust.
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	scrape := func(bearer string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+opts.MetricsAddr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := (&http.Client{Transport: transport, Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Proto, nil
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the reader's scrape to succeed", func(context.Context) error {
		code, proto, err := scrape(prometheus)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d", code)
		}
		if proto != "HTTP/1.1" {
			t.Errorf("metrics answered over %s, want HTTP/1.1 only", proto)
		}
		return nil
	})
	if code, _, err := scrape(""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("scrape without a token: status %d (%v), want 401", code, err)
	}
	if code, _, err := scrape(stranger); err != nil || code != http.StatusForbidden {
		t.Errorf("scrape with a token lacking the role: status %d (%v), want 403", code, err)
	}
	if err := httpOK("http://" + opts.MetricsAddr + "/metrics"); err == nil {
		t.Errorf("metrics answered over plain HTTP")
	}
}
