// Package clone is the operator binary's clone subcommand: the init
// container of a task with spec.repos runs it in the task's own pod, so a
// repository is fetched with the tenant's network policy and credentials,
// never by the operator. It checks out each repository at its path and
// writes repo.<name>.commit=<hash> lines as its termination message, which
// the operator reads into the task's outputs.
package clone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Command is the subcommand of the operator's binary the clone runs.
const Command = "clone"

// EnvRepos holds the repositories to clone, as JSON ([]Repo).
const EnvRepos = "CLONE_REPOS"

// SecretRoot holds each repository's Secret, mounted at <root>/<name>
// with the keys username and password.
const SecretRoot = "/var/run/kubectl-sched/repos"

// Repo is one repository to clone, as the operator hands it over.
type Repo struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Ref  string `json:"ref,omitempty"`
	Path string `json:"path"`
	// SecretDir holds the files username and password; none when empty.
	SecretDir string `json:"secretDir,omitempty"`
}

var fullHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Main runs the subcommand: it reads EnvRepos, clones each repository and
// writes the outputs (or the first error) to the termination message
// file. It returns the exit code.
func Main(ctx context.Context, getenv func(string) string, stderr io.Writer, terminationLog string) int {
	var repos []Repo
	if err := json.Unmarshal([]byte(getenv(EnvRepos)), &repos); err != nil {
		return fail(stderr, terminationLog, fmt.Errorf("%s is not a JSON list of repositories: %w", EnvRepos, err))
	}
	var msg strings.Builder
	for _, r := range repos {
		commit, err := Clone(ctx, r)
		if err != nil {
			return fail(stderr, terminationLog, fmt.Errorf("repository %s: %w", r.Name, err))
		}
		fmt.Fprintf(stderr, "Cloned %s (%s) at %s into %s\n", r.Name, r.URL, commit, r.Path)
		fmt.Fprintf(&msg, "%s=%s\n", schedv1.RepoCommitOutput(r.Name), commit)
	}
	if err := os.WriteFile(terminationLog, []byte(msg.String()), 0o644); err != nil {
		fmt.Fprintf(stderr, "error: writing the commits to %s: %v\n", terminationLog, err)
		return 1
	}
	return 0
}

func fail(stderr io.Writer, terminationLog string, err error) int {
	fmt.Fprintln(stderr, "error:", err)
	// The message explains the failed task in its status; a write that
	// fails leaves the log's tail there (FallbackToLogsOnError).
	_ = os.WriteFile(terminationLog, []byte(err.Error()+"\n"), 0o644)
	return 1
}

// Clone checks r out at r.Path and returns the commit it ended on. A path
// that already holds a clone of the same URL (an earlier attempt's, in a
// workspace) is fetched into and checked out again, so a retried attempt
// ends where a first one would.
func Clone(ctx context.Context, r Repo) (string, error) {
	auth, err := credentials(r.SecretDir)
	if err != nil {
		return "", err
	}
	repo, err := openOrInit(r)
	if err != nil {
		return "", err
	}
	remote, err := repo.Remote(git.DefaultRemoteName)
	if err != nil {
		return "", err
	}
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth})
	if err != nil {
		return "", explain(err, r)
	}
	want, err := pick(refs, r.Ref)
	if err != nil {
		return "", fmt.Errorf("%w in %s", err, r.URL)
	}
	fetch := &git.FetchOptions{Auth: auth, Force: true, Tags: git.NoTags}
	local := plumbing.ReferenceName("refs/kubectl-sched/checkout")
	if !fullHash.MatchString(r.Ref) {
		// One commit is all a task needs.
		fetch.Depth = 1
		fetch.RefSpecs = []config.RefSpec{config.RefSpec("+" + want.String() + ":" + local.String())}
	} else {
		// A commit: servers need not send a commit no ref names, so fetch
		// every branch and tag and look for it among them.
		fetch.RefSpecs = []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"}
	}
	if err := repo.FetchContext(ctx, fetch); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return "", explain(err, r)
	}
	var hash plumbing.Hash
	if !fullHash.MatchString(r.Ref) {
		h, err := repo.ResolveRevision(plumbing.Revision(local))
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", want, err)
		}
		hash = *h
	} else {
		hash = plumbing.NewHash(r.Ref)
		if _, err := repo.CommitObject(hash); err != nil {
			return "", fmt.Errorf("commit %s is on no branch or tag of %s: give a branch or a tag, or a commit one of them holds", r.Ref, r.URL)
		}
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: hash, Force: true}); err != nil {
		return "", fmt.Errorf("checking out %s: %w", hash, err)
	}
	return hash.String(), nil
}

// pick finds what to fetch for ref: the default branch for "", a branch,
// a tag, or a full commit hash.
func pick(refs []*plumbing.Reference, ref string) (plumbing.ReferenceName, error) {
	if fullHash.MatchString(ref) {
		return plumbing.ReferenceName(ref), nil
	}
	names := map[plumbing.ReferenceName]bool{}
	for _, r := range refs {
		names[r.Name()] = true
	}
	if ref == "" {
		if names[plumbing.HEAD] {
			return plumbing.HEAD, nil
		}
		return "", errors.New("no default branch (HEAD): give a ref")
	}
	for _, n := range []plumbing.ReferenceName{plumbing.ReferenceName(ref), plumbing.NewBranchReferenceName(ref), plumbing.NewTagReferenceName(ref)} {
		if names[n] && (n.IsBranch() || n.IsTag()) {
			return n, nil
		}
	}
	return "", fmt.Errorf("ref %q is no branch or tag (and not a full 40-character commit)", ref)
}

// openOrInit opens the clone already at r.Path, or starts one in an empty
// or missing folder.
func openOrInit(r Repo) (*git.Repository, error) {
	repo, err := git.PlainOpen(r.Path)
	if err == nil {
		remote, err := repo.Remote(git.DefaultRemoteName)
		if err != nil || len(remote.Config().URLs) == 0 || remote.Config().URLs[0] != r.URL {
			return nil, fmt.Errorf("%s already holds a git repository that is no clone of %s: give the repository another path", r.Path, r.URL)
		}
		return repo, nil
	}
	if !errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("opening %s: %w", r.Path, err)
	}
	entries, err := os.ReadDir(r.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// lost+found is on a fresh volume's root.
	for _, e := range entries {
		if e.Name() != "lost+found" {
			return nil, fmt.Errorf("%s is not empty (it holds %s): give the repository an empty or new path", r.Path, e.Name())
		}
	}
	if err := os.MkdirAll(r.Path, 0o755); err != nil {
		return nil, err
	}
	repo, err = git.PlainInit(r.Path, false)
	if err != nil {
		return nil, fmt.Errorf("starting a repository at %s: %w", r.Path, err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{r.URL}}); err != nil {
		return nil, err
	}
	return repo, nil
}

func credentials(dir string) (transport.AuthMethod, error) {
	if dir == "" {
		return nil, nil
	}
	read := func(key string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, key))
		if err != nil {
			return "", fmt.Errorf("the repository's Secret has no key %q (it needs username and password): %w", key, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	user, err := read("username")
	if err != nil {
		return nil, err
	}
	pass, err := read("password")
	if err != nil {
		return nil, err
	}
	return &http.BasicAuth{Username: user, Password: pass}, nil
}

// explain says what to do about a transport error.
func explain(err error, r Repo) error {
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired):
		if r.SecretDir == "" {
			return fmt.Errorf("%s asks for credentials: name a Secret with username and password in secretRef", r.URL)
		}
		return fmt.Errorf("%s refused the credentials of secretRef: check its username and password", r.URL)
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%s refused the credentials of secretRef access: check their permissions", r.URL)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s: no repository there (or it needs credentials): check the url", r.URL)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("%s is empty: push a commit first", r.URL)
	}
	return fmt.Errorf("fetching %s: %w", r.URL, err)
}
