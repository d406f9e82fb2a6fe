package testenv

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// AccountsWebhook registers the operator's service-accounts webhook
// (operator/accounts) with the test's API server by URL, on a free
// loopback port, with a CA and serving certificate made as install makes
// them, and returns the options StartOperator's mutate must apply so the
// operator serves it. The configuration is deleted when the test ends.
func AccountsWebhook(t testing.TB, c client.Client) func(*app.Options) {
	t.Helper()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, portText, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := accounts.NewServing([]string{host}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": pair.Cert, "tls.key": pair.Key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := accounts.Configuration(OperatorNamespace, admissionregistrationv1.WebhookClientConfig{
		URL:      ptr.To("https://" + addr + accounts.Path),
		CABundle: pair.CA,
	})
	ctx := context.Background()
	if err := createOrUpdate(ctx, c, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cfg) })
	return func(o *app.Options) {
		o.WebhookCertDir, o.WebhookHost, o.WebhookPort = dir, host, port
	}
}
