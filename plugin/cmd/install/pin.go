package install

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/registry"
)

// pinTimeout bounds the registry lookup: an air-gapped cluster's admin
// should not wait on a registry that will never answer.
const pinTimeout = 5 * time.Second

// checkImageRef refuses a reference that names neither a tag nor a digest:
// it would mean :latest, which anyone can move.
func checkImageRef(image string) error {
	hint := "Give the operator image with a tag or a digest: --image REPO:TAG or --image REPO@sha256:DIGEST."
	if _, err := name.ParseReference(image); err != nil {
		return cmdutil.Usage(hint, "--image %q is not an image reference: %v", image, err)
	}
	if !strings.Contains(image, "@") && strings.LastIndex(image, ":") <= strings.LastIndex(image, "/") {
		return cmdutil.Usage(hint, "--image %q has no tag or digest: give %s:TAG or %s@sha256:...", image, image, image)
	}
	return nil
}

// PinImage is image with the digest its registry serves for the tag now
// (repo:tag@sha256:...), so every replica and restart runs the same bits
// even when the tag moves. An image with a digest is returned as it is.
func PinImage(ctx context.Context, image string) (string, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", err
	}
	if _, ok := ref.(name.Digest); ok {
		return image, nil
	}
	ctx, cancel := context.WithTimeout(ctx, pinTimeout)
	defer cancel()
	digest, err := registry.Digest(ctx, ref.(name.Tag))
	if err != nil {
		return "", err
	}
	return image + "@" + digest, nil
}

// pinOperator writes the pinned image into the operator Deployment; when
// the registry cannot tell (air-gapped, or an image imported into the
// nodes), the tag stays and one warning says how to pin by hand.
func (o *Options) pinOperator(ctx context.Context) {
	for _, obj := range o.objects {
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			m, ok := c.(map[string]any)
			if !ok || m["image"] != o.image {
				continue
			}
			pinned, err := PinImage(ctx, o.image)
			if err != nil {
				reason := strings.Join(strings.Fields(err.Error()), " ")
				fmt.Fprintf(o.ErrOut, "Warning: operator image %s is not pinned to a digest: looking it up at its registry failed (%s). To pin it, give --image %s@sha256:<digest>.\n", o.image, reason, o.image)
				return
			}
			manifests.SetOperatorImage(m, pinned)
		}
		_ = unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")
	}
}
