package config

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// pinned reports why image would not name one fixed build: no tag, or
// :latest. A digest pins it whatever the tag.
func pinned(image string) error {
	if strings.Contains(image, "@sha256:") {
		return nil
	}
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	switch {
	case !ok || tag == "":
		return errors.New("has no tag: it means :latest")
	case tag == "latest":
		return errors.New("is :latest")
	}
	return nil
}

func TestPinned(t *testing.T) {
	for image, ok := range map[string]bool{
		"busybox:1.37": true, "ghcr.io/a/b:v0.1.0": true, "localhost:5000/op:v1": true, "r/op@sha256:abc": true,
		"busybox": false, "busybox:latest": false, "localhost:5000/op": false, "ghcr.io/a/b:": false,
	} {
		if got := pinned(image) == nil; got != ok {
			t.Errorf("pinned(%q) = %v, want %v", image, got, ok)
		}
	}
}

// images finds every image a manifest names: container images (any
// "image" field), kustomize images entries, and the operator settings
// that hold images (*_IMAGE, *_IMAGES as NAME=IMAGE,...).
func images(doc any, at string, found func(at, image string)) {
	switch v := doc.(type) {
	case map[string]any:
		if kind, _ := v["kind"].(string); kind == "ConfigMap" {
			data, _ := v["data"].(map[string]any)
			for k, val := range data {
				s, _ := val.(string)
				switch {
				case strings.HasSuffix(k, "_IMAGE") && s != "":
					found(at+".data."+k, s)
				case strings.HasSuffix(k, "_IMAGES"):
					for _, kv := range strings.Split(s, ",") {
						if _, img, ok := strings.Cut(kv, "="); ok {
							found(at+".data."+k, img)
						}
					}
				}
			}
		}
		for k, val := range v {
			if s, ok := val.(string); ok && k == "image" {
				found(at+".image", s)
				continue
			}
			images(val, at+"."+k, found)
		}
	case []any:
		for _, val := range v {
			images(val, at+"[]", found)
		}
	}
}

// TestImagesArePinned: nothing in config/ runs an image that is not a
// fixed build. The operator's Deployment names the placeholder "operator",
// which config/manager/kustomization.yaml pins to a release tag (and
// `kubectl sched install` to the plugin's version).
func TestImagesArePinned(t *testing.T) {
	var kustomized []string
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || strings.HasPrefix(path, "crd"+string(filepath.Separator)) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var doc any
			if err := dec.Decode(&doc); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return err
			}
			if m, ok := doc.(map[string]any); ok && filepath.Base(path) == "kustomization.yaml" {
				imgs, _ := m["images"].([]any)
				for _, i := range imgs {
					e, _ := i.(map[string]any)
					name, _ := e["name"].(string)
					newName, _ := e["newName"].(string)
					tag, _ := e["newTag"].(string)
					kustomized = append(kustomized, name)
					checked++
					if err := pinned(newName + ":" + tag); err != nil {
						t.Errorf("%s: images %s -> %s:%s %v; write a release tag", path, name, newName, tag, err)
					}
				}
				continue
			}
			images(doc, path, func(at, image string) {
				checked++
				if image == OperatorImageName {
					return // checked through kustomization.yaml below
				}
				if err := pinned(image); err != nil {
					t.Errorf("%s: image %q %v; pin a version", at, image, err)
				}
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 5 {
		t.Fatalf("found only %d images in config/: the walk is broken", checked)
	}
	if len(kustomized) == 0 || kustomized[0] != OperatorImageName {
		t.Errorf("config/manager/kustomization.yaml must map image %q to a release tag; it maps %v", OperatorImageName, kustomized)
	}
}

// The operator image config/ pins is the release krew/sched.yaml names:
// `make dist` writes both (hack/dist), so a release installs its own
// operator with `kubectl apply -k config/default` too.
func TestOperatorImageIsTheRelease(t *testing.T) {
	img, err := OperatorImage()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "krew", "sched.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Spec struct {
			Version string `json:"version"`
		} `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if want := "ghcr.io/kubectl-sched/operator:" + m.Spec.Version; img != want {
		t.Errorf("config/manager pins %s; the release in krew/sched.yaml is %s: run make dist", img, want)
	}
	manager, err := Manifests.ReadFile("manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := "app.kubernetes.io/version: " + m.Spec.Version + "\n"; !strings.Contains(string(manager), want) {
		t.Errorf("config/manager/manager.yaml's Deployment lacks %q", strings.TrimSpace(want))
	}
}
