package scale

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-sched/kubectl-sched/hack/tour"
)

// The operator's requests are counted by the API server itself: an audit
// policy logs each request of the operator's service account (metadata
// only, once it is answered) and nothing else. Each replica authenticates
// with its own token, whose ID the API server records with every request,
// so a standby's requests are told from the leader's. Counting at the API
// server needs nothing in the operator and sees what reached the server.
const operatorUser = "system:serviceaccount:" + tour.OperatorNamespace + ":" + tour.OperatorServiceAccount

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
    users: ["` + operatorUser + `"]
  - level: None
`

// auditArgs writes the policy into dir and returns kube-apiserver's flags
// for it; the log is dir/audit.log, written in batches so that no request
// waits on it.
func auditArgs(dir string) ([]string, string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, "", err
	}
	log := filepath.Join(dir, "audit.log")
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + log,
		"--audit-log-mode=batch",
		"--audit-log-maxsize=0",
	}, log, nil
}

// auditEvent is what the benchmark reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Extra map[string][]string `json:"extra"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	RequestURI string    `json:"requestURI"`
	Received   time.Time `json:"requestReceivedTimestamp"`
}

// credentialKey is where the API server records which token a request
// carried ("JTI=<the token's ID>").
const credentialKey = "authentication.kubernetes.io/credential-id"

// request is one counted request: by whom (the replica's token ID), when,
// and what ("create agenttasks", "patch agenttasks/status").
type request struct {
	jti  string
	at   time.Time
	what string
}

// readAudit reads the audit log; watches are counted when they end, so a
// watch still open at the end is not counted.
func readAudit(path string) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		what := ev.Verb + " " + ev.RequestURI
		if ev.ObjectRef != nil {
			what = ev.Verb + " " + ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				what += "/" + ev.ObjectRef.Subresource
			}
		}
		jti := ""
		for _, v := range ev.User.Extra[credentialKey] {
			jti = strings.TrimPrefix(v, "JTI=")
		}
		out = append(out, request{jti: jti, at: ev.Received, what: what})
	}
	return out, sc.Err()
}

// tokenID reads the ID (jti) of the bearer token in a kubeconfig: the
// operator's, which tour.Env.StartOperator writes.
func tokenID(kubeconfig string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	for _, a := range cfg.AuthInfos {
		parts := strings.Split(a.Token, ".")
		if len(parts) != 3 {
			continue
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			return "", err
		}
		var claims struct {
			JTI string `json:"jti"`
		}
		if err := json.Unmarshal(payload, &claims); err != nil {
			return "", err
		}
		return claims.JTI, nil
	}
	return "", fmt.Errorf("%s: no service-account token", kubeconfig)
}
