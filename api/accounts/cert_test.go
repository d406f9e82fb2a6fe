package accounts_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
)

func TestNewServingIsAValidChainForItsHosts(t *testing.T) {
	now := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	pair, err := accounts.NewServing([]string{"kubectl-sched-operator-webhook.kubectl-sched-system.svc", "127.0.0.1"}, now, accounts.CertLifetime)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(pair.Cert, pair.Key); err != nil {
		t.Fatalf("certificate and key do not pair: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pair.CA) {
		t.Fatal("CA is not PEM")
	}
	block, _ := pem.Decode(pair.Cert)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"kubectl-sched-operator-webhook.kubectl-sched-system.svc", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: now.Add(time.Hour), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.svc", Roots: roots, CurrentTime: now.Add(time.Hour)}); err == nil {
		t.Error("verified for a host it was not made for")
	}
	for name, p := range map[string][]byte{"serving": pair.Cert, "CA": pair.CA} {
		exp, err := accounts.Expiry(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := now.Add(accounts.CertLifetime); !exp.Equal(want) {
			t.Errorf("%s expires %v, want %v", name, exp, want)
		}
	}
	if _, err := accounts.Expiry([]byte("not a certificate")); err == nil {
		t.Error("Expiry of garbage: no error")
	}
}
