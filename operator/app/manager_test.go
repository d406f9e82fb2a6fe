package app_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

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

	waitFor(t, "readyz to answer 200", func() error {
		return httpOK("http://" + opts.ProbeAddr + "/readyz")
	})
	if err := httpOK("http://" + opts.ProbeAddr + "/healthz"); err != nil {
		t.Errorf("healthz: %v", err)
	}
	waitFor(t, "the leader Lease to be held", func() error {
		var lease coordinationv1.Lease
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: testenv.OperatorNamespace, Name: opts.LeaderElectionID}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		return nil
	})
	waitFor(t, "metrics to be served", func() error {
		return httpOK("http://" + opts.MetricsAddr + "/metrics")
	})
}

func TestOptionsFromEnvironment(t *testing.T) {
	cases := map[string]struct {
		args    []string
		env     map[string]string
		want    func(o *app.Options)
		wantErr string
	}{
		"defaults": {},
		"environment fills unset flags": {
			env: map[string]string{"INGRESS_DOMAIN": "apps.local", "NETWORK_POLICIES": "false", "SCHEDULER_IMAGES": "scx_lavd=reg/lavd:1", "MAX_CONCURRENT_RECONCILES": "3"},
			want: func(o *app.Options) {
				o.Settings.IngressDomain = "apps.local"
				o.Settings.NetworkPolicies = false
				o.Settings.SchedulerImages["scx_lavd"] = "reg/lavd:1"
				o.MaxConcurrentReconciles = 3
			},
		},
		"a flag wins over the environment": {
			args: []string{"--ingress-domain=flag.example"},
			env:  map[string]string{"INGRESS_DOMAIN": "env.example"},
			want: func(o *app.Options) { o.Settings.IngressDomain = "flag.example" },
		},
		"bad number": {
			env:     map[string]string{"MAX_CONCURRENT_RECONCILES": "many"},
			wantErr: `MAX_CONCURRENT_RECONCILES="many" is not a whole number`,
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
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
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

// waitFor polls cond for up to 30s: the manager's start-up is asynchronous.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %v", what, err)
}
