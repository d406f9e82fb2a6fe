package taskjob

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/clone"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// CloneContainerName is the init container that clones the task's
// spec.repos before its container starts.
const CloneContainerName = "clone"

// repoVolume is the emptyDir of a repository cloned outside the task's
// workspaces; repoSecretVolume its Secret's.
func repoVolume(name string) string       { return "repo-" + name }
func repoSecretVolume(name string) string { return "repo-secret-" + name }

// mountRepos adds the init container that clones spec.repos, in the
// operator's tools image (its clone subcommand), to pod. A repository
// whose path is under a workspace's mountPath is cloned into that
// workspace; any other gets an emptyDir of its own, mounted at its path
// in both containers. Each Secret is mounted into the init container only:
// the task's own container never sees the credentials, and the operator
// never reads them. The init container asks for what the task's container
// does, so the pod's requests (and its quota) stay the same, and runs
// with its security context.
func mountRepos(pod *corev1.PodSpec, spec *schedv1.AgentTaskSpec, image string) error {
	if len(spec.Repos) == 0 {
		return nil
	}
	if image == "" {
		return fmt.Errorf("the operator has no tools image to clone spec.repos with: set --tools-image (or OPERATOR_IMAGE)")
	}
	task := &pod.Containers[0]
	init := corev1.Container{
		Name:      CloneContainerName,
		Image:     image,
		Args:      []string{clone.Command},
		Resources: spec.Resources.Core(),
		// A clone that fails writes why; one that crashes leaves its log.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		// As the task's own user, so the task can change what it cloned.
		SecurityContext: podsecurity.Container(spec.SecurityContext.Core()),
	}
	mounted := map[string]bool{}
	repos := make([]clone.Repo, 0, len(spec.Repos))
	for _, r := range spec.Repos {
		path := r.ClonePath()
		if ws := workspaceOf(spec.Workspaces, path); ws != nil {
			if !mounted[ws.Name] {
				init.VolumeMounts = append(init.VolumeMounts, corev1.VolumeMount{Name: WorkspaceVolume(ws.Name), MountPath: ws.MountPath})
				mounted[ws.Name] = true
			}
		} else {
			vol := repoVolume(r.Name)
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			init.VolumeMounts = append(init.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: path})
			task.VolumeMounts = append(task.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: path})
		}
		cr := clone.Repo{Name: r.Name, URL: r.URL, Ref: r.Ref, Path: path}
		if r.SecretRef != nil {
			vol := repoSecretVolume(r.Name)
			cr.SecretDir = clone.SecretRoot + "/" + r.Name
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: r.SecretRef.Name,
				Items:      []corev1.KeyToPath{{Key: "username", Path: "username"}, {Key: "password", Path: "password"}},
				// Readable by the pod's group (fsGroup) only.
				DefaultMode: ptr.To[int32](0o440),
			}}})
			init.VolumeMounts = append(init.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: cr.SecretDir, ReadOnly: true})
		}
		repos = append(repos, cr)
	}
	b, err := json.Marshal(repos)
	if err != nil {
		return err
	}
	init.Env = []corev1.EnvVar{{Name: clone.EnvRepos, Value: string(b)}}
	pod.InitContainers = append(pod.InitContainers, init)
	// The non-root default user can write the clones and read the Secrets.
	pod.SecurityContext.FSGroup = ptr.To[int64](podsecurity.NonRootUID)
	return nil
}

// workspaceOf is the writable workspace whose mountPath holds path, the
// deepest when mounts nest.
func workspaceOf(mounts []schedv1.WorkspaceMount, path string) *schedv1.WorkspaceMount {
	var found *schedv1.WorkspaceMount
	for i := range mounts {
		m := &mounts[i]
		if m.ReadOnly || !(path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")) {
			continue
		}
		if found == nil || len(m.MountPath) > len(found.MountPath) {
			found = m
		}
	}
	return found
}

// reposRefused says why task's spec.repos cannot be cloned: the cluster
// has no tools image to run the clone.
func (s *Starter) reposRefused(task *schedv1.AgentTask) (reason, msg string) {
	if len(task.Spec.Repos) == 0 || s.ToolsImage != "" {
		return "", ""
	}
	return schedv1.ReasonCloneFailed, "spec.repos needs the operator's tools image for its clone, and this operator has none (it runs outside the cluster, with neither tools-image nor OPERATOR_IMAGE set): ask a cluster admin to set tools-image (kubectl sched install --tools-image), or clone in the task's own command"
}
