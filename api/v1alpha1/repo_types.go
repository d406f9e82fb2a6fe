package v1alpha1

// Bounds of repositories (docs/admins/security.md lists them).
const (
	// MaxRepos is the most repositories one task (or step) clones.
	MaxRepos = 8
	// MaxRepoURLLength is the longest repository URL.
	MaxRepoURLLength = 2048
	// DefaultRepoRoot holds the clones of repositories without a path:
	// /workspace/<name>.
	DefaultRepoRoot = "/workspace"
	// RepoOutputPrefix starts the output that holds the commit a clone
	// ended on: repo.<name>.commit.
	RepoOutputPrefix = "repo."
)

// Repo is a git repository cloned before the task's container starts, in
// an init container of the operator's tools image that runs in the task's
// pod, under the task's service account and network policy: the operator
// itself never fetches anything. The commit it ended on becomes the
// output repo.<name>.commit.
// +kubebuilder:validation:XValidation:rule="!has(self.secretRef) || self.url.startsWith('https://')",message="a repository with secretRef needs an https:// url: credentials are never sent in clear text",fieldPath=".secretRef"
type Repo struct {
	// Name of the repository, a DNS label: the output repo.<name>.commit
	// holds its commit, and /workspace/<name> is its path by default.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// URL to clone, https:// or http:// (no credentials in it: use
	// secretRef). Other schemes (file://, ssh://, git://) are refused.
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="url must start with https:// or http://; file://, ssh:// and git:// are not supported"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/]*@')",message="url must not hold credentials (user:token@): name a Secret in secretRef"
	// +kubebuilder:validation:XValidation:rule="!self.contains(' ')",message="url must not hold spaces"
	URL string `json:"url"`

	// Ref is a branch, a tag or a full 40-character commit; the
	// repository's default branch when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[^-\s:~^?*\[\\][^\s:~^?*\[\\]*$`
	Ref string `json:"ref,omitempty"`

	// Path in the task's container where the working tree goes, an
	// absolute path: /workspace/<name> when empty. Under the mountPath of
	// one of the task's workspaces it is cloned into that workspace (so
	// later steps see it); elsewhere into a volume of the pod's own (an
	// emptyDir, counted in the pod's ephemeral storage).
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[^:]*$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('/../') && !self.endsWith('/..') && !self.contains('//')",message="path must be a clean absolute path, without .. or //"
	Path string `json:"path,omitempty"`

	// SecretRef names a Secret of the task's own namespace with the keys
	// username and password (a token) for an https:// url. It is mounted
	// into the clone's init container only; the operator never reads it.
	// +optional
	SecretRef *RepoSecretRef `json:"secretRef,omitempty"`
}

// RepoSecretRef names a Secret of the task's namespace: a pod can mount no
// other, so a task cannot reach another namespace's credentials.
type RepoSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// ClonePath is where the repository's working tree goes.
func (r *Repo) ClonePath() string {
	if r.Path != "" {
		return r.Path
	}
	return DefaultRepoRoot + "/" + r.Name
}

// RepoCommitOutput is the output key that holds the commit repository name
// was checked out at.
func RepoCommitOutput(name string) string { return RepoOutputPrefix + name + ".commit" }
