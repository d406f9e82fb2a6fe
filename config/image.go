package config

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// OperatorImageName is the placeholder the operator's Deployment names
// (image: operator); config/manager/kustomization.yaml's images: field,
// and `kubectl sched install`, replace it.
const OperatorImageName = "operator"

// OperatorImage is the image config/manager/kustomization.yaml pins the
// operator to: a release tag, never :latest. `make dist` writes it
// (hack/dist), and `kubectl sched install` from a development build, which
// has no release version of its own, installs it.
func OperatorImage() (string, error) {
	data, err := Manifests.ReadFile("manager/kustomization.yaml")
	if err != nil {
		return "", err
	}
	var k struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return "", fmt.Errorf("config/manager/kustomization.yaml: %w", err)
	}
	for _, img := range k.Images {
		if img.Name == OperatorImageName {
			if img.NewName == "" || img.NewTag == "" {
				return "", fmt.Errorf("config/manager/kustomization.yaml: image %q needs newName and newTag", OperatorImageName)
			}
			return img.NewName + ":" + img.NewTag, nil
		}
	}
	return "", fmt.Errorf("config/manager/kustomization.yaml has no image %q", OperatorImageName)
}
