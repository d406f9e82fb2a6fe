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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

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
	if err := e.cluster.ImportBinaryImage(ctx, toolsImage, filepath.Join(e.bin, "operator")); err != nil {
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

// The attack: a tenant's member names, in secretRef, a Secret of another
// namespace that they cannot read themselves, hoping the operator's clone
// mounts it for them. secretRef has no namespace to name (strict field
// validation refuses one), and the name is resolved in the pod's own
// namespace: the pod cannot mount it, and the kubelet says so.
func TestTaskCannotMountAnotherNamespacesSecret(t *testing.T) {
	e := need(t)
	ctx := context.Background()
	if err := e.cluster.ImportBinaryImage(ctx, toolsImage, filepath.Join(e.bin, "operator")); err != nil {
		t.Fatal(err)
	}
	e.operator(t, "TOOLS_IMAGE="+toolsImage)
	const tenantNS, member = "repos-tenant", "bob"
	realTier(t, e, "real-node")
	if out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "tenant", "create", tenantNS, "--tier", "real-node", "--user", member); code != 0 {
		t.Fatalf("tenant create: exit %d\n%s%s", code, out, errOut)
	}
	t.Cleanup(func() {
		_ = e.client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})
	})
	quotaCounts(t, e, tenantNS)
	e.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: ns},
		StringData: map[string]string{"username": "ci", "password": "not-for-bob"}})

	// What the member cannot do directly.
	if out, errOut, code := e.kubectlRun(t, time.Minute, "get", "secret", "git-creds", "-n", ns, "--as", member); code == 0 || !strings.Contains(errOut, "forbidden") {
		t.Fatalf("the member read another namespace's Secret directly: exit %d\n%s%s", code, out, errOut)
	}

	// A namespace in secretRef is no field of the API.
	manifest := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: AgentTask
metadata: {name: steal-ns}
spec:
  image: busybox:1.36
  repos: [{name: app, url: "https://example.com/app.git", secretRef: {name: git-creds, namespace: default}}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := e.kubectlRun(t, time.Minute, "create", "-f", manifest, "-n", tenantNS, "--as", member)
	if code == 0 || !strings.Contains(errOut, `unknown field "spec.repos[0].secretRef.namespace"`) {
		t.Errorf("secretRef with a namespace: exit %d, want it refused as an unknown field\n%s%s", code, out, errOut)
	}

	// The name alone is the tenant's namespace's: no such Secret there.
	out, errOut, code = e.kubectlRun(t, time.Minute, "sched", "task", "run", "steal", "-n", tenantNS, "--as", member, "--image", "busybox:1.36",
		"--node-pool", "real", "--repo", "https://example.com/app.git", "--repo-secret", "git-creds", "--", "sh", "-c", "cat /var/run/kubectl-sched/repos/app/password")
	if code != 0 {
		t.Fatalf("task run: exit %d\n%s%s", code, out, errOut)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pods := e.podsOf(t, tenantNS, map[string]string{schedv1.LabelAgentTask: "steal"})
		if len(pods) == 1 {
			p := pods[0]
			for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
				if cs.State.Running != nil || cs.State.Terminated != nil {
					t.Fatalf("container %s of %s started: the pod mounted a Secret it must not have", cs.Name, p.Name)
				}
			}
			evs, err := e.kube.CoreV1().Events(tenantNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, ev := range evs.Items {
				if ev.Reason == "FailedMount" && strings.Contains(ev.Message, `secret "git-creds" not found`) {
					found = true
				}
			}
			if found {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no FailedMount event saying secret \"git-creds\" is not found in %s for the task's pod (pods: %d)", tenantNS, len(pods))
		}
		time.Sleep(time.Second)
	}
	task := &schedv1.AgentTask{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "steal"}, task); err != nil {
		t.Fatal(err)
	}
	if task.Status.Phase.Finished() {
		t.Errorf("the task finished (%s: %s), want it held before its clone", task.Status.Phase, task.Status.Message)
	}
	// Nothing copied the Secret into the tenant's namespace.
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "git-creds"}, &corev1.Secret{}); err == nil {
		t.Error("a Secret git-creds appeared in the tenant's namespace")
	}
}

// The pipeline on the real node, as far as this branch goes: the
// first step clones a repository served from the host into the run's
// workspace, the second builds from those files (the repository's own
// build script writes a 100 KiB file into the workspace), the third reads
// that file through a read-only mount, and takes the commit the clone
// ended on from the first step's outputs. Every step's log stays readable
// after its pod is deleted.
func TestWorkflowClonesBuildsAndReads(t *testing.T) {
	e := need(t)
	ctx := context.Background()
	if err := e.cluster.ImportBinaryImage(ctx, toolsImage, filepath.Join(e.bin, "operator")); err != nil {
		t.Fatal(err)
	}
	e.operator(t, "TOOLS_IMAGE="+toolsImage)

	work, root := t.TempDir(), t.TempDir()
	git(t, work, "init", "-q", ".")
	build := "mkdir -p /src/out\nhead -c 102400 /dev/zero | tr '\\000' 'a' > /src/out/artifact\necho \"built $(wc -c < /src/out/artifact) bytes\"\necho \"size=$(wc -c < /src/out/artifact)\" > /dev/termination-log\n"
	if err := os.WriteFile(filepath.Join(work, "build.sh"), []byte(build), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "build.sh")
	git(t, work, "commit", "-q", "-m", "build script")
	head := git(t, work, "rev-parse", "HEAD")
	git(t, root, "clone", "-q", "--bare", work, "app.git")
	url := gitServer(t, e, root) + "/app.git"

	step := func(name, script string, readOnly bool) schedv1.WorkflowStep {
		s := schedv1.WorkflowStep{Name: name, Task: shTask("", script).Spec}
		s.Task.Workspaces = []schedv1.WorkspaceMount{{Name: "src", MountPath: "/src", ReadOnly: readOnly}}
		return s
	}
	clone := step("clone", `echo "cloned: $(ls /src/app)"; echo "files=$(ls /src/app | wc -l)" > /dev/termination-log`, false)
	clone.Task.Repos = []schedv1.Repo{{Name: "app", URL: url, Path: "/src/app"}}
	read := step("read", `echo "read $(wc -c < /src/out/artifact) bytes of ${steps.clone.output.repo.app.commit}"; echo "size=$(wc -c < /src/out/artifact)" > /dev/termination-log; echo "commit=${steps.clone.output.repo.app.commit}" >> /dev/termination-log`, true)
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "clone-build-read", Namespace: ns},
		Spec: schedv1.WorkflowSpec{
			Workspaces: []schedv1.Workspace{{Name: "src", Size: resource.MustParse("64Mi"), StorageClass: cluster.HostPathStorageClass}},
			Steps:      []schedv1.WorkflowStep{clone, step("build", "sh /src/app/build.sh", false), read},
		},
	}
	e.create(t, wf)
	wf = eventually(t, e, wf, 4*time.Minute, func(w *schedv1.Workflow) bool { return w.Status.Phase.Finished() })
	if wf.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("workflow %s (%s): %s\n%s", wf.Status.Phase, wf.Status.Reason, wf.Status.Message, dump(wf))
	}
	wants := []map[string]string{
		{"files": "1", "repo.app.commit": head},
		{"size": "102400"},
		{"size": "102400", "commit": head},
	}
	for i, want := range wants {
		if diff := cmp.Diff(want, wf.Status.Steps[i].Outputs); diff != "" {
			t.Errorf("step %s's outputs (-want +got):\n%s", wf.Status.Steps[i].Name, diff)
		}
	}

	// The pods go; the logs stay in the tasks' status.
	for i, want := range []string{"cloned: build.sh", "built 102400 bytes", "read 102400 bytes of " + head} {
		name := wf.Status.Steps[i].TaskName
		if err := e.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: schedv1.LabelAgentTask + "=" + name}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for len(e.podsOf(t, ns, map[string]string{schedv1.LabelAgentTask: name})) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the pods of %s are still there after a minute", name)
			}
			time.Sleep(250 * time.Millisecond)
		}
		out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "task", "logs", name)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("task logs %s after its pod was deleted: exit %d, want %q in:\n%s%s", name, code, want, out, errOut)
		}
	}
}
