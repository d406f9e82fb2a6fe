package app_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// operatorClient acts as the operator's service account in env, bound to
// its generated role: what the confinement, accounts and webhook tests try
// their attacks as.
func operatorClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	cfg, err := testenv.OperatorConfig(context.Background(), env.Config)
	if err != nil {
		t.Fatal(err)
	}
	op, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return op
}
