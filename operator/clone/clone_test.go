package clone_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/operator/clone"
)

// source is a repository on disk: go-git reaches a path in-process, the
// same code that speaks to an https:// server past the transport.
type source struct {
	t    *testing.T
	dir  string
	repo *git.Repository
}

func newSource(t *testing.T) *source {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	return &source{t: t, dir: dir, repo: repo}
}

// commit writes file with content and commits it on the current branch.
func (s *source) commit(file, content string) string {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, file), []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
	wt, err := s.repo.Worktree()
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := wt.Add(file); err != nil {
		s.t.Fatal(err)
	}
	h, err := wt.Commit("add "+file, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}})
	if err != nil {
		s.t.Fatal(err)
	}
	return h.String()
}

func (s *source) branch(name, from string) {
	s.t.Helper()
	if err := s.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(name), plumbing.NewHash(from))); err != nil {
		s.t.Fatal(err)
	}
}

func (s *source) tag(name, at string) {
	s.t.Helper()
	if _, err := s.repo.CreateTag(name, plumbing.NewHash(at), &git.CreateTagOptions{Message: name, Tagger: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}}); err != nil {
		s.t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestClone(t *testing.T) {
	src := newSource(t)
	first := src.commit("a.txt", "one")
	src.tag("v1", first)
	src.branch("old", first)
	second := src.commit("a.txt", "two")

	cases := map[string]struct {
		ref        string
		wantCommit string
		wantFile   string
		wantErr    string
	}{
		"default branch": {wantCommit: second, wantFile: "two"},
		"branch":         {ref: "old", wantCommit: first, wantFile: "one"},
		"annotated tag":  {ref: "v1", wantCommit: first, wantFile: "one"},
		"full ref name":  {ref: "refs/heads/old", wantCommit: first, wantFile: "one"},
		"commit":         {ref: first, wantCommit: first, wantFile: "one"},
		"missing ref":    {ref: "nope", wantErr: `ref "nope" is no branch or tag`},
		"unknown commit": {ref: strings.Repeat("ab", 20), wantErr: "is on no branch or tag"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "src")
			got, err := clone.Clone(context.Background(), clone.Repo{Name: "app", URL: src.dir, Ref: tc.ref, Path: path})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Clone error = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCommit, got); diff != "" {
				t.Errorf("commit (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFile, read(t, filepath.Join(path, "a.txt"))); diff != "" {
				t.Errorf("a.txt (-want +got):\n%s", diff)
			}
		})
	}
}

// A retried attempt finds its earlier attempt's clone in the workspace
// and ends where a first attempt would, at the branch's new commit.
func TestCloneAgainIntoItsOwnClone(t *testing.T) {
	src := newSource(t)
	src.commit("a.txt", "one")
	path := filepath.Join(t.TempDir(), "src")
	r := clone.Repo{Name: "app", URL: src.dir, Path: path}
	if _, err := clone.Clone(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "a.txt"), []byte("changed by a crashed attempt"), 0o644); err != nil {
		t.Fatal(err)
	}
	second := src.commit("a.txt", "two")
	got, err := clone.Clone(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got != second || read(t, filepath.Join(path, "a.txt")) != "two" {
		t.Errorf("second clone: commit %s and a.txt %q, want %s and \"two\"", got, read(t, filepath.Join(path, "a.txt")), second)
	}
}

func TestCloneRefusesWhatItWouldOverwrite(t *testing.T) {
	src := newSource(t)
	src.commit("a.txt", "one")
	other := newSource(t)
	other.commit("b.txt", "b")

	cases := map[string]struct {
		prepare func(path string)
		wantErr string
	}{
		"files": {
			prepare: func(path string) {
				_ = os.MkdirAll(path, 0o755)
				_ = os.WriteFile(filepath.Join(path, "notes"), []byte("mine"), 0o644)
			},
			wantErr: "is not empty (it holds notes)",
		},
		"another repository's clone": {
			prepare: func(path string) {
				if _, err := clone.Clone(context.Background(), clone.Repo{Name: "o", URL: other.dir, Path: path}); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "no clone of " + src.dir,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "src")
			tc.prepare(path)
			_, err := clone.Clone(context.Background(), clone.Repo{Name: "app", URL: src.dir, Path: path})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Clone error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestMainWritesCommitsOrTheError(t *testing.T) {
	src := newSource(t)
	head := src.commit("a.txt", "one")
	dir := t.TempDir()

	cases := map[string]struct {
		repos    string
		wantCode int
		wantMsg  string
	}{
		"two repositories": {
			repos:   `[{"name":"app","url":"` + src.dir + `","path":"` + dir + `/app"},{"name":"lib","url":"` + src.dir + `","path":"` + dir + `/lib"}]`,
			wantMsg: "repo.app.commit=" + head + "\nrepo.lib.commit=" + head + "\n",
		},
		"credentials without a password": {
			repos:    `[{"name":"app","url":"` + src.dir + `","path":"` + dir + `/c","secretDir":"` + dir + `"}]`,
			wantCode: 1,
			wantMsg:  "repository app: the repository's Secret has no key \"username\"",
		},
		"not JSON": {repos: "app", wantCode: 1, wantMsg: "CLONE_REPOS is not a JSON list of repositories"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			term := filepath.Join(t.TempDir(), "termination-log")
			var stderr strings.Builder
			code := clone.Main(context.Background(), func(string) string { return tc.repos }, &stderr, term)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if got := read(t, term); !strings.HasPrefix(got, tc.wantMsg) {
				t.Errorf("termination message %q, want it to start with %q", got, tc.wantMsg)
			}
		})
	}
}
