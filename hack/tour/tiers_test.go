package tour

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

var update = flag.Bool("update", false, "rewrite free-tier.yaml from config/manager/tiers.yaml")

const freeTierHeader = `# The tour's cluster has a real node, node pool "real", which no installed
# tier may use. This patch of the ConfigMap kubectl-sched-tiers (kubectl
# patch --patch-file) is the installed free tier, config/manager/tiers.yaml,
# with "real" added to its placement.nodePools, so the tour's tenant runs
# real containers and reads their logs. Written by
# 'go test ./hack/tour -update'; a test keeps it equal to the installed tier.
`

// freeTierWithReal is the patch: the installed free tier, pool real added.
func freeTierWithReal(tiers []byte) (string, error) {
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(tiers, &cm); err != nil {
		return "", err
	}
	free, ok := cm.Data["free"]
	const pools, withReal = "nodePools: [general]", "nodePools: [general, real]"
	if !ok || strings.Count(free, pools) != 1 {
		return "", fmt.Errorf("the free tier has no single %q to add the real pool to:\n%s", pools, free)
	}
	free = strings.Replace(free, pools, withReal, 1)
	var b strings.Builder
	b.WriteString(freeTierHeader + "data:\n  free: |\n")
	for _, line := range strings.Split(strings.TrimRight(free, "\n"), "\n") {
		if line != "" {
			line = "    " + line
		}
		b.WriteString(line + "\n")
	}
	return b.String(), nil
}

// TestFreeTierPatch keeps hack/tour/free-tier.yaml the installed free tier
// with the real pool added, so the tour's tenant has what any free tenant
// has.
func TestFreeTierPatch(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tiers, err := os.ReadFile(filepath.Join(root, "config", "manager", "tiers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := freeTierWithReal(tiers)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "hack", "tour", "free-tier.yaml")
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is not the installed free tier with the real pool; run 'go test ./hack/tour -update'. Want:\n%s", path, want)
	}
	var patch corev1.ConfigMap
	if err := yaml.UnmarshalStrict(got, &patch); err != nil || !strings.Contains(patch.Data["free"], "nodePools: [general, real]") {
		t.Errorf("%s does not parse as a patch of the free tier: %v", path, err)
	}
}
