package realnode

import (
	"context"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// toolsImage is the operator binary in an image on the real node, as the
// release's operator image would be there.
const toolsImage = "kubectl-sched/tools:realnode"

// gitServer serves the bare repositories under root over git's smart HTTP
// protocol (git http-backend behind net/http/cgi) on the host's address
// that the real node's pods reach, until the test ends. It returns the
// base URL.
func gitServer(t *testing.T, e *env, root string) string {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test serves a repository with git http-backend and needs git on PATH: %v", err)
	}
	ip, err := e.cluster.RealNodeIP()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	h := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// git runs git in dir and returns its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// A task clones a repository served from the host in an init container of
// the tools image (the operator binary's clone subcommand), reads a file
// of it, and reports the commit it ran on; a ref that is not there fails
// the task with the clone's own words.
func TestTaskClonesARepositoryFromTheHost(t *testing.T) {
	e := need(t)
	ctx := context.Background()
	if err := e.cluster.ImportToolsImage(ctx, filepath.Join(e.bin, "operator"), toolsImage); err != nil {
		t.Fatal(err)
	}
	e.operator(t, "TOOLS_IMAGE="+toolsImage)

	work, root := t.TempDir(), t.TempDir()
	git(t, work, "init", "-q", ".")
	if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "hello.txt")
	git(t, work, "commit", "-q", "-m", "hello")
	head := git(t, work, "rev-parse", "HEAD")
	git(t, root, "clone", "-q", "--bare", work, "app.git")
	url := gitServer(t, e, root) + "/app.git"

	ok := shTask("clone-ok", `cat /workspace/app/hello.txt; echo "content=$(cat /workspace/app/hello.txt)" > /dev/termination-log`)
	ok.Spec.Repos = []schedv1.Repo{{Name: "app", URL: url, Ref: "main"}}
	missing := shTask("clone-missing-ref", `echo never`)
	missing.Spec.Repos = []schedv1.Repo{{Name: "app", URL: url, Ref: "nope"}}
	e.create(t, ok)
	e.create(t, missing)

	ok = eventually(t, e, ok, 3*time.Minute, finished)
	if ok.Status.Phase != schedv1.TaskSucceeded {
		t.Fatalf("phase %s (%s): %s", ok.Status.Phase, ok.Status.Reason, ok.Status.Message)
	}
	want := map[string]string{"content": "hello from the host", "repo.app.commit": head}
	if diff := cmp.Diff(want, ok.Status.Outputs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "describe", "task", ok.Name)
	if code != 0 || !strings.Contains(out, url) || !strings.Contains(out, head) {
		t.Errorf("describe: exit %d, want the url and commit %s in:\n%s%s", code, head, out, errOut)
	}

	missing = eventually(t, e, missing, 3*time.Minute, finished)
	if missing.Status.Phase != schedv1.TaskFailed || missing.Status.Reason != schedv1.ReasonCloneFailed ||
		!strings.Contains(missing.Status.Message, `ref "nope" is no branch or tag`) {
		t.Errorf("a missing ref: phase %s, reason %s, message %q; want Failed, CloneFailed, saying the ref is no branch or tag",
			missing.Status.Phase, missing.Status.Reason, missing.Status.Message)
	}
}
