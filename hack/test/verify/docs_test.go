package verify

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/hack/docgen"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestReferenceDocsUpToDate writes docs/reference in memory from the code
// (hack/docgen) and fails when a committed page differs, or when a page
// docgen once wrote is no longer made: run make docs and commit the result.
func TestReferenceDocsUpToDate(t *testing.T) {
	root := repoRoot(t)
	pages, err := docgen.Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range pages {
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("%s is not committed; run make docs", rel)
			continue
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s is stale; run make docs (-generated +committed):\n%s", rel, diff)
		}
	}
	committed, _ := filepath.Glob(filepath.Join(root, docgen.Dir, "*.md"))
	for _, f := range committed {
		rel, _ := filepath.Rel(root, f)
		data, _ := os.ReadFile(f)
		if _, ok := pages[filepath.ToSlash(rel)]; !ok && strings.Contains(string(data), "by hack/docgen: run make docs") {
			t.Errorf("%s was generated but docgen no longer makes it; delete it", rel)
		}
	}
}

// TestMarkdownLinks reads every Markdown file of the repository as GitHub
// does and fails on a relative link to a file that does not exist, or to
// an anchor its target does not have.
func TestMarkdownLinks(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files, want the README and docs/ at least", len(files))
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = docgen.Anchors(string(data))
		return anchors[path]
	}
	links := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, l := range docgen.Links(string(data)) {
			if external.MatchString(l.Target) {
				continue
			}
			links++
			target, frag, _ := strings.Cut(l.Target, "#")
			target, err := url.PathUnescape(target)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", rel, l.Line, l.Target, err)
				continue
			}
			path := f
			switch {
			case strings.HasPrefix(target, "/"):
				path = filepath.Join(root, filepath.FromSlash(target))
			case target != "":
				path = filepath.Join(filepath.Dir(f), filepath.FromSlash(target))
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s:%d: link %q: %s does not exist", rel, l.Line, l.Target, target)
				continue
			}
			if frag == "" || info.IsDir() || !strings.HasSuffix(path, ".md") {
				continue
			}
			if !anchorsOf(path)[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading or anchor #%s", rel, l.Line, l.Target, filepath.Base(path), frag)
			}
		}
	}
	if links < 100 {
		t.Errorf("checked %d relative links, want the docs' hundreds", links)
	}
}

// external links are left alone: a scheme such as https: or mailto:.
var external = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// markdownFiles are the repository's .md files, but for what git ignores
// at the top (bin/, dist/) and the .git folder.
func markdownFiles(t *testing.T, root string) []string {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && slices.Contains([]string{".git", "bin", "dist", "demo"}, d.Name()) && filepath.Dir(p) == root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestREADME keeps the README what a new user reads first: short, with
// the two commands of a fresh machine, each a target of the Makefile.
func TestREADME(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, at most 250: move the detail into docs/", n)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"demo", "test"} {
		if !regexp.MustCompile(`(?m)^make ` + target + `\b`).Match(readme) {
			t.Errorf("README.md does not give the command make %s at the start of a line", target)
		}
		if !regexp.MustCompile(`(?m)^` + target + `:`).Match(makefile) {
			t.Errorf("the Makefile has no target %s, which the README gives", target)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
