package testenv

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry serves an in-memory OCI registry (go-containerregistry's) on a
// loopback port until the test ends and returns its host:port. Plain
// HTTP, which registry clients fall back to for loopback addresses.
func Registry(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// PushImage pushes a small image (a config and one layer, OCI media
// types) to ref, HOST/REPO:TAG of a plain HTTP registry such as
// Registry's, as the registry API takes it, and returns its manifest's
// digest.
func PushImage(t testing.TB, ref string) string {
	t.Helper()
	host, repoTag, _ := strings.Cut(ref, "/")
	repo, tag, ok := strings.Cut(repoTag, ":")
	if !ok {
		t.Fatalf("PushImage(%q): want HOST/REPO:TAG", ref)
	}
	base := "http://" + host + "/v2/" + repo
	blob := func(data []byte) string {
		d := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
		resp, err := http.Post(base+"/blobs/uploads/?digest="+d, "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("push blob %s: %s", d, resp.Status)
		}
		return d
	}
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	layer := []byte(ref) // any bytes: nothing unpacks it
	manifest := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`,
		blob(config), len(config), blob(layer), len(layer))
	req, err := http.NewRequest(http.MethodPut, base+"/manifests/"+tag, strings.NewReader(manifest))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("push manifest %s: %s", ref, resp.Status)
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(manifest)))
}
