// Package image builds the operator image of a release with ko (used as a
// library) and pushes it: one OCI index for linux/amd64 and linux/arm64, a
// static binary (CGO_ENABLED=0) running as uid 65532, the OCI labels, and
// ko's SPDX SBOM beside each image. The release command (make release),
// this package's test (make test-release) and hack/test/realnode's release test
// (through the command) run this same code.
//
// Nothing can be pulled where we build, so the base is made here from files
// (passwd and group with the nonroot user, /tmp, /home/nonroot: what
// distroless/static:nonroot gives a static binary that needs no CA bundle)
// and handed to ko in memory.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/ko/pkg/build"
	"github.com/google/ko/pkg/publish"
)

const (
	// importPath is the operator's main package, what ko builds.
	importPath = "github.com/kubectl-sched/kubectl-sched/operator"
	// ImageName is the operator image's name under the registry.
	ImageName = "operator"
	sourceURL = "https://github.com/kubectl-sched/kubectl-sched"
	// NonRootUID is distroless's nonroot user, which the restricted Pod
	// Security profile and config/manager's runAsNonRoot accept.
	NonRootUID = "65532"
	// baseName names the base in the image's base-name annotation; it is
	// made here, never pulled.
	baseName = "kubectl-sched.local/static-nonroot:base"
)

// Platforms are the operator image's platforms.
var Platforms = []string{"linux/amd64", "linux/arm64"}

var semver = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// Options say what to build and where to push it.
type Options struct {
	Version  string // v-prefixed semver: the tag, the binary's and the label's version
	Registry string // the image is <Registry>/operator:<Version>
	Revision string // git commit, for the revision label
	Created  time.Time
	Dir      string // repository root
	SBOMDir  string // also write the SBOMs here when set
	Insecure bool   // push over plain HTTP (loopback and private addresses are already)
	Keychain authn.Keychain
	// Platforms default to Platforms; a test may build its host's only.
	Platforms []string
}

// Publish builds the operator for every platform with ko and pushes
// the index under its version tag (never latest), with an SBOM per image.
// It returns repo:tag@sha256:..., the reference to install.
func Publish(ctx context.Context, o Options) (name.Reference, error) {
	if !semver.MatchString(o.Version) {
		return nil, fmt.Errorf("version %q is not a v-prefixed semver (VERSION=v0.2.0)", o.Version)
	}
	if o.Registry == "" {
		return nil, fmt.Errorf("no registry to push to (REGISTRY=ghcr.io/kubectl-sched)")
	}
	if o.Keychain == nil {
		o.Keychain = authn.DefaultKeychain
	}
	if len(o.Platforms) == 0 {
		o.Platforms = Platforms
	}
	base, err := BaseIndex(o.Platforms)
	if err != nil {
		return nil, err
	}
	baseRef, err := name.ParseReference(baseName)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":    "kubectl-sched-operator",
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  o.Created.Format(time.RFC3339),
	}
	opts := []build.Option{
		build.WithBaseImages(func(context.Context, string) (name.Reference, build.Result, error) {
			return baseRef, base, nil
		}),
		build.WithPlatforms(o.Platforms...),
		build.WithTrimpath(true),
		build.WithLdflags([]string{"-s", "-w", "-buildid=", "-X", "main.version=" + o.Version}),
		build.WithDefaultEnv([]string{"CGO_ENABLED=0"}),
		build.WithUser(NonRootUID + ":" + NonRootUID),
		build.WithCreationTime(v1.Time{Time: o.Created}),
		build.WithKoDataCreationTime(v1.Time{Time: o.Created}),
		build.WithSPDX(koVersion()),
	}
	for k, v := range labels {
		// Labels for docker inspect and the registries' UIs; annotations
		// for tools that read only the manifest.
		opts = append(opts, build.WithLabel(k, v), build.WithAnnotation(k, v))
	}
	if o.SBOMDir != "" {
		opts = append(opts, build.WithSBOMDir(o.SBOMDir))
	}
	builder, err := build.NewGo(ctx, o.Dir, opts...)
	if err != nil {
		return nil, err
	}
	res, err := builder.Build(ctx, build.StrictScheme+importPath)
	if err != nil {
		return nil, fmt.Errorf("build the operator image: %w", err)
	}
	pub, err := publish.NewDefault(o.Registry,
		publish.WithAuthFromKeychain(o.Keychain),
		publish.WithTags([]string{o.Version}),
		publish.WithNamer(func(base, _ string) string { return base + "/" + ImageName }),
		publish.Insecure(o.Insecure),
	)
	if err != nil {
		return nil, err
	}
	if _, err := pub.Publish(ctx, res, build.StrictScheme+importPath); err != nil {
		return nil, fmt.Errorf("push the operator image: %w", err)
	}
	h, err := res.Digest()
	if err != nil {
		return nil, err
	}
	return name.ParseReference(fmt.Sprintf("%s/%s:%s@%s", o.Registry, ImageName, o.Version, h), insecureOpt(o.Insecure)...)
}

func insecureOpt(insecure bool) []name.Option {
	if insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// koVersion is the ko module built in, for the SBOM's creator field.
func koVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/google/ko" {
				return d.Version
			}
		}
	}
	return "devel"
}

// BaseIndex is the base for every platform: one layer of files, OCI media
// types (ko types its layers like the base's), user nonroot.
func BaseIndex(platforms []string) (v1.ImageIndex, error) {
	layer, err := baseLayer()
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
		cf.Config.User = NonRootUID + ":" + NonRootUID
		cf.Config.WorkingDir = "/home/nonroot"
		cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	return idx, nil
}

// baseLayer holds what a non-root static binary expects of its file system.
// Fixed times and order keep its digest the same on every machine.
func baseLayer() (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	entries := []struct {
		name string
		mode int64
		body string
		dir  bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:" + NonRootUID + ":" + NonRootUID + ":nonroot:/home/nonroot:/sbin/nologin\n"},
		{name: "etc/group", mode: 0o644, body: "root:x:0:\nnobody:x:65534:\nnonroot:x:" + NonRootUID + ":\n"},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		if e.dir {
			h.Typeflag = tar.TypeDir
		}
		if e.name == "home/nonroot/" {
			h.Uid, h.Gid = 65532, 65532
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
