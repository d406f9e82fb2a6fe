package docgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// tiersFile is the tiers ConfigMap install applies.
const tiersFile = "config/manager/tiers.yaml"

// tiersPage is docs/reference/tiers.md: each installed tier's quota,
// container limits, placement and TTLs, one row per setting, read from
// the ConfigMap as it is (a setting a tier leaves out shows as –).
func tiersPage(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(tiersFile)))
	if err != nil {
		return "", err
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal(data, cm); err != nil {
		return "", err
	}
	var doc yaml3Doc
	if err := yaml3.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	var names []string // the tiers in the file's order
	for i := 0; i+1 < len(doc.Data.Content); i += 2 {
		names = append(names, doc.Data.Content[i].Value)
	}
	if len(names) != len(cm.Data) {
		return "", fmt.Errorf("%s: read %d tiers in order, %d in all", tiersFile, len(names), len(cm.Data))
	}
	var rows []string // setting paths in order of first appearance
	values := map[string]map[string]string{}
	for _, tier := range names {
		var n yaml3.Node
		if err := yaml3.Unmarshal([]byte(cm.Data[tier]), &n); err != nil {
			return "", fmt.Errorf("tier %s: %w", tier, err)
		}
		if len(n.Content) == 0 {
			continue
		}
		flatten("", n.Content[0], func(path, value string) {
			if values[path] == nil {
				values[path] = map[string]string{}
				rows = append(rows, path)
			}
			values[path][tier] = value
		})
	}
	var b strings.Builder
	b.WriteString(header(tiersFile + " (the ConfigMap kubectl-sched-tiers)"))
	b.WriteString("# Tiers\n\n")
	b.WriteString("The tiers `kubectl sched install` ships, as `kubectl sched tenant create NAME --tier TIER` applies them: ")
	b.WriteString("`quota` is the namespace's ResourceQuota `kubectl-sched-tier`, `limits` its LimitRange (per container), ")
	b.WriteString("`placement` what its workloads may ask of the scheduler and `ttl` how long finished tasks and workflows stay. ")
	b.WriteString("[Tiers](../admins/tiers.md) says what each setting does and how to change a tier.\n\n")
	b.WriteString("| setting | " + strings.Join(names, " | ") + " |\n|---|" + strings.Repeat("---|", len(names)) + "\n")
	for _, path := range rows {
		cells := []string{"`" + path + "`"}
		for _, tier := range names {
			v, ok := values[path][tier]
			switch {
			case !ok:
				v = "–"
			case v == "":
				v = "none"
			default:
				v = "`" + strings.ReplaceAll(v, "|", `\|`) + "`"
			}
			cells = append(cells, v)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String(), nil
}

// yaml3Doc is the part of the ConfigMap read for the order of its keys.
type yaml3Doc struct {
	Data yaml3.Node `yaml:"data"`
}

// flatten calls add for every scalar under n with its dotted path; a list
// of scalars is one value, its items joined with commas.
func flatten(path string, n *yaml3.Node, add func(path, value string)) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch n.Kind {
	case yaml3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			flatten(join(n.Content[i].Value), n.Content[i+1], add)
		}
	case yaml3.SequenceNode:
		var items []string
		for _, c := range n.Content {
			var buf bytes.Buffer
			if c.Kind == yaml3.ScalarNode {
				buf.WriteString(c.Value)
			} else {
				out, _ := yaml3.Marshal(c)
				buf.Write(bytes.TrimSpace(out))
			}
			items = append(items, buf.String())
		}
		add(path, strings.Join(items, ", "))
	default:
		add(path, n.Value)
	}
}
