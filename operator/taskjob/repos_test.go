package taskjob

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/clone"
)

// TestRepoMounts: a repository under a writable workspace is cloned into
// it; any other gets an emptyDir mounted in both containers; a Secret is
// mounted into the clone's init container only.
func TestRepoMounts(t *testing.T) {
	secretVol := func(name, secret string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, DefaultMode: ptr.To[int32](0o440),
			Items: []corev1.KeyToPath{{Key: "username", Path: "username"}, {Key: "password", Path: "password"}},
		}}}
	}
	emptyDir := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	for name, tc := range map[string]struct {
		spec        func(*schedv1.AgentTaskSpec)
		wantRepos   []clone.Repo
		wantVolumes []string // besides the workspaces'
		initMounts  []corev1.VolumeMount
		taskMounts  []corev1.VolumeMount
		extraVolume *corev1.Volume
	}{
		"default path, no workspace": {
			spec: func(s *schedv1.AgentTaskSpec) {
				s.Repos = []schedv1.Repo{{Name: "app", URL: "https://git.example.com/app.git"}}
				s.SecurityContext = &schedv1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
			},
			wantRepos:   []clone.Repo{{Name: "app", URL: "https://git.example.com/app.git", Path: "/workspace/app"}},
			wantVolumes: []string{"repo-app"},
			initMounts:  []corev1.VolumeMount{{Name: "repo-app", MountPath: "/workspace/app"}},
			taskMounts:  []corev1.VolumeMount{{Name: "repo-app", MountPath: "/workspace/app"}},
		},
		"into a workspace, with a Secret": {
			spec: func(s *schedv1.AgentTaskSpec) {
				s.Workspaces = []schedv1.WorkspaceMount{{Name: "src", MountPath: "/src", ClaimName: "c"}}
				s.Repos = []schedv1.Repo{{Name: "app", URL: "https://git.example.com/app.git", Ref: "v1", Path: "/src/app", SecretRef: &schedv1.RepoSecretRef{Name: "git"}}}
			},
			wantRepos:   []clone.Repo{{Name: "app", URL: "https://git.example.com/app.git", Ref: "v1", Path: "/src/app", SecretDir: clone.SecretRoot + "/app"}},
			wantVolumes: []string{"ws-src", "repo-secret-app"},
			initMounts: []corev1.VolumeMount{
				{Name: "ws-src", MountPath: "/src"},
				{Name: "repo-secret-app", MountPath: clone.SecretRoot + "/app", ReadOnly: true},
			},
			taskMounts: []corev1.VolumeMount{{Name: "ws-src", MountPath: "/src"}},
		},
		"a read-only workspace is passed over; two repositories share a workspace": {
			spec: func(s *schedv1.AgentTaskSpec) {
				s.Workspaces = []schedv1.WorkspaceMount{{Name: "ro", MountPath: "/data", ClaimName: "r", ReadOnly: true}, {Name: "rw", MountPath: "/work", ClaimName: "w"}}
				s.Repos = []schedv1.Repo{
					{Name: "a", URL: "http://git.local/a", Path: "/data/a"},
					{Name: "b", URL: "http://git.local/b", Path: "/work/b"},
					{Name: "c", URL: "http://git.local/c", Path: "/work"},
				}
			},
			wantRepos: []clone.Repo{
				{Name: "a", URL: "http://git.local/a", Path: "/data/a"},
				{Name: "b", URL: "http://git.local/b", Path: "/work/b"},
				{Name: "c", URL: "http://git.local/c", Path: "/work"},
			},
			wantVolumes: []string{"ws-ro", "ws-rw", "repo-a"},
			initMounts:  []corev1.VolumeMount{{Name: "repo-a", MountPath: "/data/a"}, {Name: "ws-rw", MountPath: "/work"}},
			taskMounts: []corev1.VolumeMount{
				{Name: "ws-ro", MountPath: "/data", ReadOnly: true}, {Name: "ws-rw", MountPath: "/work"},
				{Name: "repo-a", MountPath: "/data/a"},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			task := MakeAgentTask("t", "ns").Image("busybox").Spec(tc.spec).Obj()
			pod := buildJob(task, nil).Spec.Template.Spec
			if err := mountRepos(&pod, &task.Spec, "tools:v1"); err != nil {
				t.Fatal(err)
			}
			if len(pod.InitContainers) != 1 {
				t.Fatalf("init containers %d, want 1", len(pod.InitContainers))
			}
			init := pod.InitContainers[0]
			if init.Name != CloneContainerName || init.Image != "tools:v1" || !cmp.Equal(init.Args, []string{"clone"}) {
				t.Errorf("init container %s %s %v, want clone tools:v1 [clone]", init.Name, init.Image, init.Args)
			}
			var got []clone.Repo
			if err := json.Unmarshal([]byte(init.Env[0].Value), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRepos, got); diff != "" {
				t.Errorf("repos handed to the clone (-want +got):\n%s", diff)
			}
			var vols []string
			for _, v := range pod.Volumes {
				vols = append(vols, v.Name)
				if strings.HasPrefix(v.Name, "repo-secret-") {
					if diff := cmp.Diff(secretVol(v.Name, "git"), v); diff != "" {
						t.Errorf("secret volume (-want +got):\n%s", diff)
					}
				} else if strings.HasPrefix(v.Name, "repo-") {
					if diff := cmp.Diff(emptyDir(v.Name), v); diff != "" {
						t.Errorf("repo volume (-want +got):\n%s", diff)
					}
				}
			}
			if diff := cmp.Diff(tc.wantVolumes, vols); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.initMounts, init.VolumeMounts); diff != "" {
				t.Errorf("clone's mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.taskMounts, pod.Containers[0].VolumeMounts); diff != "" {
				t.Errorf("task's mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(pod.Containers[0].Resources, init.Resources); diff != "" {
				t.Errorf("the clone asks for other resources than the task (-task +clone):\n%s", diff)
			}
			if diff := cmp.Diff(pod.Containers[0].SecurityContext, init.SecurityContext); diff != "" {
				t.Errorf("the clone runs with another security context than the task (-task +clone):\n%s", diff)
			}
			if pod.SecurityContext.FSGroup == nil {
				t.Error("no fsGroup: the non-root clone could not read its Secret")
			}
		})
	}
}

func TestRepoMountsWithoutToolsImage(t *testing.T) {
	task := MakeAgentTask("t", "ns").Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) {
		s.Repos = []schedv1.Repo{{Name: "app", URL: "https://git.example.com/app.git"}}
	}).Obj()
	pod := buildJob(task, nil).Spec.Template.Spec
	err := mountRepos(&pod, &task.Spec, "")
	if err == nil || !strings.Contains(err.Error(), "--tools-image") {
		t.Fatalf("mountRepos without an image: %v, want an error naming --tools-image", err)
	}
	plain := MakeAgentTask("t", "ns").Image("busybox").Obj()
	pod = buildJob(plain, nil).Spec.Template.Spec
	if err := mountRepos(&pod, &plain.Spec, ""); err != nil || len(pod.InitContainers) != 0 {
		t.Fatalf("a task without repos: %v and %d init containers, want neither", err, len(pod.InitContainers))
	}
}

// A task with spec.repos on an operator without a tools image is refused
// with what to do, as file outputs are, instead of a Job whose clone
// cannot start.
func TestReposRefusedWithoutToolsImage(t *testing.T) {
	withRepos := MakeAgentTask("t", "ns").Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) {
		s.Repos = []schedv1.Repo{{Name: "app", URL: "https://git.example.com/app.git"}}
	}).Obj()
	reason, msg := (&Starter{}).reposRefused(withRepos)
	if reason != schedv1.ReasonCloneFailed || !strings.Contains(msg, "kubectl sched install --tools-image") {
		t.Errorf("no tools image: %q %q, want CloneFailed naming --tools-image", reason, msg)
	}
	if reason, _ := (&Starter{ToolsImage: "tools:v1"}).reposRefused(withRepos); reason != "" {
		t.Errorf("with a tools image: refused as %s", reason)
	}
	if reason, _ := (&Starter{}).reposRefused(MakeAgentTask("t", "ns").Image("busybox").Obj()); reason != "" {
		t.Errorf("no repos: refused as %s", reason)
	}
}
