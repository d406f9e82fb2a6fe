package cluster

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Images on the real node. Nothing can be pulled on our machines, so every
// image a test, template or the demo runs there is built here from the
// host's static busybox and imported into the node's containerd.
var (
	// BusyboxImages are the names pods use for busybox; all are one image.
	BusyboxImages = []string{"busybox", "busybox:1", "busybox:1.36", "busybox:1.37", "busybox:latest"}
	// PauseImage is the pod sandbox image (containerd's sandbox_image).
	PauseImage = "registry.k8s.io/pause:3.10.1"
)

// nonRootUID is the user of the restricted default (and of distroless's
// nonroot), so a pod that sets only runAsNonRoot can start.
const nonRootUID = "65532"

// busyboxImage is /bin/busybox with a link per applet, /tmp, and passwd
// entries for root and the non-root user.
func busyboxImage(busybox string, entrypoint []string) (v1.Image, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	l := newLayer()
	l.dir("bin", 0o755)
	l.file("bin/busybox", bin, 0o755)
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			l.symlink("bin/"+applet, "busybox")
		}
	}
	l.dir("etc", 0o755)
	l.file("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nnonroot:x:"+nonRootUID+":"+nonRootUID+":nonroot:/home/nonroot:/bin/sh\n"), 0o644)
	l.file("etc/group", []byte("root:x:0:\nnonroot:x:"+nonRootUID+":\n"), 0o644)
	l.dir("tmp", 0o1777)
	l.dir("home/nonroot", 0o755)
	return l.image(entrypoint, "", []string{"PATH=/bin"})
}

// writeArchive writes images as one docker-archive tarball (what
// "ctr images import" reads), each under all of its tags.
func writeArchive(path string, images map[string]v1.Image) error {
	refs := map[name.Reference]v1.Image{}
	for tag, img := range images {
		ref, err := name.NewTag(tag)
		if err != nil {
			return err
		}
		refs[ref] = img
	}
	return tarball.MultiRefWriteToFile(path, refs)
}

// layer builds one image layer in memory.
type layer struct {
	buf bytes.Buffer
	tw  *tar.Writer
	err error
}

func newLayer() *layer {
	l := &layer{}
	l.tw = tar.NewWriter(&l.buf)
	return l
}

// Fixed times keep the layer digest the same from run to run.
var epoch = time.Unix(0, 0)

func (l *layer) header(h *tar.Header, body []byte) {
	if l.err != nil {
		return
	}
	h.ModTime, h.Format = epoch, tar.FormatPAX
	if l.err = l.tw.WriteHeader(h); l.err == nil && body != nil {
		_, l.err = l.tw.Write(body)
	}
}

func (l *layer) dir(path string, mode int64) {
	l.header(&tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode}, nil)
}

func (l *layer) file(path string, body []byte, mode int64) {
	l.header(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: mode, Size: int64(len(body))}, body)
}

func (l *layer) symlink(path, target string) {
	l.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: path, Linkname: target, Mode: 0o777}, nil)
}

func (l *layer) image(entrypoint []string, user string, env []string) (v1.Image, error) {
	if l.err != nil {
		return nil, l.err
	}
	if err := l.tw.Close(); err != nil {
		return nil, err
	}
	b := l.buf.Bytes()
	ly, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, ly)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint, cf.Config.User, cf.Config.Env = entrypoint, user, env
	cf.Config.WorkingDir = "/"
	return mutate.ConfigFile(img, cf)
}
