package cluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	etcdTimeout      = 60 * time.Second
	apiServerTimeout = 120 * time.Second
	portAttempts     = 3
)

type runFunc func(name string, args []string, env ...string) (*process, error)

// startEtcd starts etcd on free loopback ports and returns its client URL.
func startEtcd(ctx context.Context, dir string, run runFunc) (string, error) {
	for attempt := 1; ; attempt++ {
		client, peer := freePort(), freePort()
		if client == 0 || peer == 0 || client == peer {
			return "", errors.New("no two free ports on 127.0.0.1")
		}
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
		p, err := run("etcd", []string{
			"--name=sim",
			"--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=sim=" + peerURL,
			"--initial-cluster-state=new",
			// A throw-away cluster: durability is not worth the fsync latency.
			"--unsafe-no-fsync",
			"--log-level=warn",
		})
		if err != nil {
			return "", err
		}
		err = waitFor(ctx, dir, p, etcdTimeout, func(ctx context.Context) error {
			body, err := httpGet(ctx, nil, clientURL+"/health", "")
			if err == nil && !strings.Contains(body, `"health":"true"`) {
				err = fmt.Errorf("health: %s", body)
			}
			return err
		})
		if err == nil {
			return clientURL, nil
		}
		if attempt < portAttempts && portTaken(dir, p) {
			_ = os.RemoveAll(filepath.Join(dir, "etcd"))
			continue
		}
		return "", err
	}
}

// startAPIServer starts kube-apiserver on a free loopback port and returns
// its URL once /readyz answers ok.
func startAPIServer(ctx context.Context, dir, etcdURL, token, bind string, extra []string, run runFunc) (string, error) {
	pki := filepath.Join(dir, "pki")
	for attempt := 1; ; attempt++ {
		port := freePort()
		if port == 0 {
			return "", errors.New("no free port on 127.0.0.1")
		}
		server := fmt.Sprintf("https://127.0.0.1:%d", port)
		p, err := run("kube-apiserver", append([]string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=" + bind,
			fmt.Sprintf("--secure-port=%d", port),
			// Without it kube-apiserver looks for the host's default-route
			// address and exits on a machine without one. A documentation
			// address (RFC 5737): only the kubernetes Service's endpoints
			// use it, and nothing here dials them.
			"--advertise-address=192.0.2.1",
			"--cert-dir=" + pki,
			"--token-auth-file=" + filepath.Join(pki, "tokens.csv"),
			"--authorization-mode=Node,RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + filepath.Join(pki, "sa.key"),
			"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
			"--service-cluster-ip-range=10.96.0.0/16",
			"--allow-privileged=true",
			// Node names do not resolve here; the real node's kubelet is
			// dialled at its address (logs, exec).
			"--kubelet-preferred-address-types=InternalIP,Hostname",
			// There is no kube-proxy: the API server reaches a webhook's
			// Service (the operator's service-accounts webhook) at its
			// endpoints' pod addresses, as it does aggregated APIs.
			"--enable-aggregator-routing=true",
		}, extra...))
		if err != nil {
			return "", err
		}
		insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // polled before its self-signed cert is known
		err = waitFor(ctx, dir, p, apiServerTimeout, func(ctx context.Context) error {
			body, err := httpGet(ctx, insecure, server+"/readyz", token)
			if err == nil && body != "ok" {
				err = fmt.Errorf("readyz: %s", body)
			}
			return err
		})
		if err == nil {
			return server, nil
		}
		if attempt < portAttempts && portTaken(dir, p) {
			continue
		}
		return "", err
	}
}

// waitFor polls check until it succeeds, the process exits, or timeout.
func waitFor(ctx context.Context, dir string, p *process, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if p.exited() {
			return componentError(dir, p.name, fmt.Sprintf("exited (%v)", p.err))
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return componentError(dir, p.name, fmt.Sprintf("not ready after %s (last check: %v)", timeout, last))
			}
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// portTaken reports whether p exited because its port was taken between
// freePort and the bind (another cluster starting at the same time).
func portTaken(dir string, p *process) bool {
	if !p.exited() {
		return false
	}
	b, _ := os.ReadFile(logPath(dir, p.name))
	return strings.Contains(string(b), "address already in use")
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func httpGet(ctx context.Context, tlsConfig *tls.Config, url, token string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: nil}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return strings.TrimSpace(string(b)), nil
}

// writeCredentials writes the service-account signing key and static
// tokens for kube-apiserver, and returns them: the admin's and
// kube-controller-manager's. Both are in group system:masters (the
// controller manager runs without --use-service-account-credentials, so
// every controller uses its rights), but the controller manager has its own
// user name, system:kube-controller-manager, as on a real cluster: admission
// policies that let only the built-in controllers through match it.
func writeCredentials(dir string) (admin, controllerManager string, err error) {
	pki := filepath.Join(dir, "pki")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(pki, "sa.key"), keyPEM, 0o600); err != nil {
		return "", "", err
	}
	token := func() (string, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return hex.EncodeToString(b), err
	}
	if admin, err = token(); err != nil {
		return "", "", err
	}
	if controllerManager, err = token(); err != nil {
		return "", "", err
	}
	lines := admin + `,admin,admin,"system:masters"` + "\n" +
		controllerManager + `,system:kube-controller-manager,system:kube-controller-manager,"system:masters"` + "\n"
	if err := os.WriteFile(filepath.Join(pki, "tokens.csv"), []byte(lines), 0o600); err != nil {
		return "", "", err
	}
	return admin, controllerManager, nil
}

// writeKubeconfig writes dir/<file> for token. It trusts
// kube-apiserver's self-signed certificate (cert-dir/apiserver.crt, which
// holds the serving certificate and its CA) when that verifies for
// 127.0.0.1, and skips TLS verification otherwise.
func writeKubeconfig(ctx context.Context, dir, file, server, token string) error {
	const name = "kubectl-sched-sim"
	cluster := &clientcmdapi.Cluster{Server: server}
	if ca, err := verifiedCA(ctx, filepath.Join(dir, "pki", "apiserver.crt"), server, token); err == nil {
		cluster.CertificateAuthorityData = ca
	} else {
		cluster.InsecureSkipTLSVerify = true
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = cluster
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, filepath.Join(dir, file))
}

func verifiedCA(ctx context.Context, path, server, token string) ([]byte, error) {
	ca, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s: no certificates", path)
	}
	block, _ := pem.Decode(ca)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		return nil, err
	}
	// The file is read while kube-apiserver serves; make sure it is the
	// certificate actually served.
	_, err = httpGet(ctx, &tls.Config{RootCAs: pool}, server+"/readyz", token)
	return ca, err
}

// Attach returns the cluster running in dir if it is healthy: every component
// is running and kube-apiserver is ready. It starts nothing.
func Attach(ctx context.Context, dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), pids: map[string]int{}}
	for _, name := range components {
		pid := readPID(dir, name)
		if !ownedProcess(dir, name, pid) {
			return nil, fmt.Errorf("%s is not running (log: %s)", name, logPath(dir, name))
		}
		c.pids[name] = pid
	}
	if n := loadRealNode(dir); n != nil && readPID(dir, "kubelet") != 0 {
		for _, name := range realNodeComponents {
			pid := readPID(dir, name)
			if !ownedProcess(dir, name, pid) {
				return nil, fmt.Errorf("%s of the real node is not running (log: %s)", name, logPath(dir, name))
			}
			c.pids[name] = pid
		}
		c.RealNode = n.Name
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	c.Server = cfg.Host
	if err := readyz(ctx, cfg); err != nil {
		return nil, fmt.Errorf("kube-apiserver is not ready: %w", err)
	}
	return c, nil
}

func readyz(ctx context.Context, cfg *rest.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(string(body)); s != "ok" {
		return fmt.Errorf("readyz: %s", s)
	}
	return nil
}
