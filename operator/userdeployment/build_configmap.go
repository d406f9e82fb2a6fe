package userdeployment

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// annotationConfigHash on pod templates changes with the app's config, so
// a config change rolls the pods (environment is read at start only).
const annotationConfigHash = schedv1.GroupName + "/config-hash"

func buildConfigMap(ud *schedv1.UserDeployment) *corev1.ConfigMap {
	if len(ud.Spec.Config) == 0 {
		return nil
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(ud, names.ConfigMap(ud.Name), ""),
		Data:       maps.Clone(ud.Spec.Config),
	}
}

// configHash is a short digest of the config, independent of map order.
func configHash(config map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(config)) {
		fmt.Fprintf(h, "%s=%s\x00", k, config[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
