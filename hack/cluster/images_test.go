package cluster

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The archive "ctr images import" reads: each tag resolves to an image
// whose one layer holds busybox, a link per applet and the non-root user.
func TestBusyboxArchive(t *testing.T) {
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("no %s (Debian's busybox-static; hack/install-node-packages.sh): %v", busybox, err)
	}
	img, err := busyboxImage(busybox, nil)
	if err != nil {
		t.Fatal(err)
	}
	pause, err := busyboxImage(busybox, []string{"/bin/sleep", "2147483647"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "images.tar")
	if err := writeArchive(path, map[string]v1.Image{"busybox:1.36": img, PauseImage: pause}); err != nil {
		t.Fatal(err)
	}

	for tag, wantEntrypoint := range map[string][]string{"busybox:1.36": nil, PauseImage: {"/bin/sleep", "2147483647"}} {
		ref, err := name.NewTag(tag)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tarball.ImageFromPath(path, &ref)
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		cf, err := got.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantEntrypoint, cf.Config.Entrypoint); diff != "" {
			t.Errorf("%s entrypoint (-want +got):\n%s", tag, diff)
		}
		if cf.OS != "linux" {
			t.Errorf("%s os %q", tag, cf.OS)
		}
		files := layerFiles(t, got)
		for _, want := range []string{"bin/busybox", "bin/sh", "bin/httpd", "bin/sha256sum", "etc/passwd", "tmp/"} {
			if _, ok := files[want]; !ok {
				t.Errorf("%s lacks %s", tag, want)
			}
		}
		if h := files["bin/sh"]; h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
			t.Errorf("bin/sh is %+v, want a link to busybox", h)
		}
		if h := files["bin/busybox"]; h.Mode&0o111 == 0 {
			t.Errorf("bin/busybox mode %o is not executable", h.Mode)
		}
	}
}

func layerFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
	}
	return files
}
