package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The release's image step, as `make release` runs it (the release command
// calls Publish), against a real registry: what a user pulls is an index of
// both platforms, each a static non-root operator with the labels and an
// SBOM.
func TestPublish(t *testing.T) {
	reg := testRegistry(t)
	// Bounded by go test's -timeout (make test-release: TEST_TIMEOUT), a
	// minute early so a slow build fails with ko's error: cross-compiling
	// the operator from a cold cache took over 15 minutes on two loaded cores.
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		defer cancel()
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	const version, revision = "v0.2.0-rc.1", "0123456789abcdef0123456789abcdef01234567"
	start := time.Now()
	ref, err := Publish(ctx, Options{
		Version: version, Registry: reg + "/kubectl-sched", Revision: revision,
		Created: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), Dir: root,
		SBOMDir: t.TempDir(), Keychain: authn.NewMultiKeychain(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed %s in %s", ref, time.Since(start).Round(time.Millisecond))

	wantRepo := reg + "/kubectl-sched/operator"
	if got := ref.Context().Name(); got != wantRepo || !strings.Contains(ref.String(), ":"+version+"@sha256:") {
		t.Errorf("returned %s, want %s:%s@sha256:...", ref, wantRepo, version)
	}
	tag, _ := name.NewTag(wantRepo + ":" + version)
	desc, err := remote.Get(tag, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("the version tag: %v", err)
	}
	if desc.MediaType != types.OCIImageIndex {
		t.Fatalf("%s is %s, want an OCI index", tag, desc.MediaType)
	}
	if d, ok := ref.(name.Digest); !ok || d.DigestStr() != desc.Digest.String() {
		t.Errorf("returned %s, the tag points at %s", ref, desc.Digest)
	}
	if _, err := remote.Head(tag.Context().Tag("latest"), remote.WithContext(ctx)); err == nil {
		t.Error("latest was pushed; a release pushes only its version")
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		if m.Platform == nil {
			t.Errorf("manifest %s has no platform", m.Digest)
			continue
		}
		p := m.Platform.String()
		platforms = append(platforms, p)
		t.Run(p, func(t *testing.T) {
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img, m.Platform, version, revision)
			checkSBOM(t, ctx, tag.Context(), m.Digest)
		})
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, Platforms) {
		t.Errorf("index platforms %v, want %v", platforms, Platforms)
	}
}

// testRegistry serves an in-memory registry on loopback, where
// go-containerregistry's clients use plain HTTP. It is hack/testenv's
// Registry, kept here because this module does not import the product's.
func testRegistry(t *testing.T) string {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func checkImage(t *testing.T, img v1.Image, p *v1.Platform, version, revision string) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config says %s/%s", cf.OS, cf.Architecture)
	}
	if uid, _, _ := strings.Cut(cf.Config.User, ":"); uid != NonRootUID {
		t.Errorf("user %q, want %s (non-root)", cf.Config.User, NonRootUID)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.title":    "kubectl-sched-operator",
		"org.opencontainers.image.licenses": "Apache-2.0",
	} {
		if got := cf.Config.Labels[k]; got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}
	if len(cf.Config.Entrypoint) != 1 {
		t.Fatalf("entrypoint %q, want the operator binary alone", cf.Config.Entrypoint)
	}
	entry := cf.Config.Entrypoint[0]
	bin, files := fileFromImage(t, img, entry)
	for _, want := range []string{"etc/passwd", "tmp"} {
		if !slices.Contains(files, want) {
			t.Errorf("the image has no /%s (files: %v)", want, files)
		}
	}
	if bin == nil {
		t.Fatalf("entrypoint %s is not in the image", entry)
	}
	ef, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("entrypoint %s: %v", entry, err)
	}
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if ef.Machine != wantMachine {
		t.Errorf("entrypoint is for %s, want %s", ef.Machine, wantMachine)
	}
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Error("entrypoint is dynamically linked; want a static binary")
		}
	}
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if bi.Path != importPath || settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("binary %s, CGO_ENABLED=%q, -trimpath=%q; want the operator, 0 and true", bi.Path, settings["CGO_ENABLED"], settings["-trimpath"])
	}
	// -trimpath leaves -ldflags out of the build info: ask the binary.
	if p.Architecture != runtime.GOARCH {
		if !bytes.Contains(bin, []byte(version)) {
			t.Errorf("the binary does not hold its version %s", version)
		}
		return
	}
	exe := filepath.Join(t.TempDir(), "operator")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "--version").CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != version {
		t.Errorf("operator --version: %q (%v), want %s", got, err, version)
	}
}

// fileFromImage reads one file of the flattened image and lists the paths.
func fileFromImage(t *testing.T, img v1.Image, path string) ([]byte, []string) {
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	var names []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n := strings.Trim(h.Name, "/")
			names = append(names, n)
			if "/"+n == path {
				if body, err = io.ReadAll(tr); err != nil {
					t.Fatal(err)
				}
			}
		}
		_ = rc.Close()
	}
	return body, names
}

// checkSBOM: ko pushes each image's SPDX document under cosign's tag
// sha256-<digest>.sbom, where cosign download sbom finds it.
func checkSBOM(t *testing.T, ctx context.Context, repo name.Repository, d v1.Hash) {
	tag := repo.Tag(d.Algorithm + "-" + d.Hex + ".sbom")
	img, err := remote.Image(tag, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("SBOM %s: %v", tag, err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("SBOM %s: %d layers, %v", tag, len(layers), err)
	}
	mt, _ := layers[0].MediaType()
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name string `json:"name"`
		} `json:"packages"`
	}
	if err := json.NewDecoder(rc).Decode(&doc); err != nil {
		t.Fatalf("SBOM %s (%s): %v", tag, mt, err)
	}
	var names []string
	for _, p := range doc.Packages {
		names = append(names, p.Name)
	}
	if !strings.HasPrefix(doc.SPDXVersion, "SPDX-") || !slices.Contains(names, "github.com/kubectl-sched/kubectl-sched") || !slices.Contains(names, "sigs.k8s.io/controller-runtime") {
		t.Errorf("SBOM %s (%s): %s, packages %v; want SPDX naming the operator and its modules", tag, mt, doc.SPDXVersion, names)
	}
}
