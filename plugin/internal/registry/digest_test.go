package registry_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/registry"
)

// guarded is go-containerregistry's in-memory registry behind the
// authentication a registry asks for (mode): none, Basic (ann:pw), or
// Bearer with a token server at /token that gives "good-token" to ann:pw
// and to the refresh token "refresh-1", and "anon-token", which the
// registry refuses, to anyone. Pushes need nothing.
type guarded struct {
	mode     string
	registry http.Handler
	url      string
	noDigest bool

	mu sync.Mutex
	// asked are the token server's requests: method and form.
	asked []string
}

func (g *guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		g.token(w, r)
		return
	}
	if r.Method == http.MethodHead || r.Method == http.MethodGet {
		want := map[string]string{"basic": "Basic " + base64.StdEncoding.EncodeToString([]byte("ann:pw")), "bearer": "Bearer good-token"}[g.mode]
		if want != "" && r.Header.Get("Authorization") != want {
			challenge := `Basic realm="test"`
			if g.mode == "bearer" {
				challenge = `Bearer realm="` + g.url + `/token",service="test-registry",scope="repository:team/op:pull"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
	}
	if g.noDigest {
		w = noDigestWriter{w}
	}
	g.registry.ServeHTTP(w, r)
}

func (g *guarded) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	g.mu.Lock()
	g.asked = append(g.asked, r.Method+" "+r.Form.Encode())
	g.mu.Unlock()
	token := "anon-token"
	if user, pass, ok := r.BasicAuth(); ok && user == "ann" && pass == "pw" {
		token = "good-token"
	}
	if r.Method == http.MethodPost {
		if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != "refresh-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"access_token": "good-token"})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"token": token})
}

// noDigestWriter drops Docker-Content-Digest, as a registry may.
type noDigestWriter struct{ http.ResponseWriter }

func (w noDigestWriter) WriteHeader(code int) {
	w.Header().Del("Docker-Content-Digest")
	w.ResponseWriter.WriteHeader(code)
}

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func TestDigest(t *testing.T) {
	cases := map[string]struct {
		mode     string
		config   string
		tag      string
		noDigest bool
		wantErr  string
		// asked are the token server's requests.
		asked []string
	}{
		"open":                {mode: "none"},
		"basic":               {mode: "basic", config: `{"auths":{"HOST":{"auth":"` + basic("ann", "pw") + `"}}}`},
		"basic, no login":     {mode: "basic", wantErr: "HOST asks for credentials and none are stored for it: 'docker login HOST' stores them"},
		"basic, wrong":        {mode: "basic", config: `{"auths":{"HOST":{"auth":"` + basic("ann", "nope") + `"}}}`, wantErr: "HOST refuses HOST/team/op:v1 (401 Unauthorized)"},
		"bearer, user":        {mode: "bearer", config: `{"auths":{"HOST":{"username":"ann","password":"pw"}}}`, asked: []string{"GET scope=repository%3Ateam%2Fop%3Apull&service=test-registry"}},
		"bearer, refresh":     {mode: "bearer", config: `{"auths":{"HOST":{"identitytoken":"refresh-1"}}}`, asked: []string{"POST client_id=kubectl-sched&grant_type=refresh_token&refresh_token=refresh-1&scope=repository%3Ateam%2Fop%3Apull&service=test-registry"}},
		"bearer, bad refresh": {mode: "bearer", config: `{"auths":{"HOST":{"identitytoken":"stale"}}}`, wantErr: "token server of HOST answered 401 Unauthorized", asked: []string{"POST client_id=kubectl-sched&grant_type=refresh_token&refresh_token=stale&scope=repository%3Ateam%2Fop%3Apull&service=test-registry"}},
		"bearer, token":       {mode: "bearer", config: `{"auths":{"HOST":{"registrytoken":"good-token"}}}`},
		"bearer, anonymous":   {mode: "bearer", wantErr: "HOST refuses HOST/team/op:v1 (401 Unauthorized)", asked: []string{"GET scope=repository%3Ateam%2Fop%3Apull&service=test-registry"}},
		"no such tag":         {mode: "none", tag: "v2", wantErr: "HOST has no image HOST/team/op:v2"},
		"no digest":           {mode: "none", noDigest: true, wantErr: `HOST answered no sha256 digest for HOST/team/op:v1 (Docker-Content-Digest "")`},
	}
	for caseName, tc := range cases {
		t.Run(caseName, func(t *testing.T) {
			g := &guarded{mode: tc.mode, registry: ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))), noDigest: tc.noDigest}
			srv := httptest.NewServer(g)
			t.Cleanup(srv.Close)
			g.url = srv.URL
			host := strings.TrimPrefix(srv.URL, "http://")
			want := testenv.PushImage(t, host+"/team/op:v1")

			dir := t.TempDir()
			t.Setenv("DOCKER_CONFIG", dir)
			if tc.config != "" {
				if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.ReplaceAll(tc.config, "HOST", host)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tag := tc.tag
			if tag == "" {
				tag = "v1"
			}
			ref, err := name.NewTag(host + "/team/op:" + tag)
			if err != nil {
				t.Fatal(err)
			}
			got, err := registry.Digest(context.Background(), ref)
			if tc.wantErr != "" {
				if wantErr := strings.ReplaceAll(tc.wantErr, "HOST", host); err == nil || !strings.Contains(err.Error(), wantErr) {
					t.Errorf("error %v, want one holding %q", err, wantErr)
				}
			} else if err != nil || got != want {
				t.Errorf("Digest = %q, %v; want %q", got, err, want)
			}
			if diff := cmp.Diff(tc.asked, g.asked); diff != "" {
				t.Errorf("the token server was asked (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDigestUnreachable(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	ref, _ := name.NewTag("127.0.0.1:1/team/op:v1")
	if _, err := registry.Digest(context.Background(), ref); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("got %v, want connection refused", err)
	}
}
