// Package docgen writes the reference pages of docs/reference from the
// code they describe: the plugin's commands (its cobra tree), the
// operator's settings (api/settings), the exit codes (plugin/internal/cmdutil),
// the CRDs' fields and bounds (config/crd/bases), the admission policies
// (config/policy) and the installed tiers (config/manager/tiers.yaml).
// `make docs` writes them (cmd/docgen);
// hack/test/verify fails when a committed page differs from what Pages makes.
// It also reads Markdown as GitHub does (Anchors, Links) for hack/test/verify's
// link check.
package docgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dir is where the pages go, from the repository's root.
const Dir = "docs/reference"

// Pages are the generated pages, by path from the repository's root
// (root), with their contents.
func Pages(root string) (map[string]string, error) {
	pages := map[string]string{}
	cmds, err := commands()
	if err != nil {
		return nil, fmt.Errorf("commands: %w", err)
	}
	pages["commands.md"] = cmds
	pages["settings.md"] = settingsPage()
	pages["exit-codes.md"] = exitCodes()
	crdPages, err := crds(root)
	if err != nil {
		return nil, fmt.Errorf("CRDs: %w", err)
	}
	for name, page := range crdPages {
		pages[name] = page
	}
	pols, err := policies(root)
	if err != nil {
		return nil, fmt.Errorf("admission policies: %w", err)
	}
	pages["policies.md"] = pols
	tiers, err := tiersPage(root)
	if err != nil {
		return nil, fmt.Errorf("tiers: %w", err)
	}
	pages["tiers.md"] = tiers
	out := make(map[string]string, len(pages))
	for name, page := range pages {
		out[filepath.ToSlash(filepath.Join(Dir, name))] = strings.TrimRight(page, "\n") + "\n"
	}
	return out, nil
}

// Write writes Pages under root.
func Write(root string) ([]string, error) {
	pages, err := Pages(root)
	if err != nil {
		return nil, err
	}
	var written []string
	for rel, page := range pages {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			return nil, err
		}
		written = append(written, rel)
	}
	return written, nil
}

// header opens every page: where it comes from, and how to write it again.
func header(source string) string {
	return fmt.Sprintf("<!-- Generated from %s by hack/docgen: run make docs, do not edit. -->\n\n", source)
}
