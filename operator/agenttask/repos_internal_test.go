package agenttask

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func podWithClone(exit int32, msg string) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{
		Name: CloneContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: msg}},
	}}}}
}

func TestWithRepoCommits(t *testing.T) {
	for name, tc := range map[string]struct {
		outputs map[string]string
		pod     *corev1.Pod
		want    map[string]string
		wantErr string
	}{
		"no clone": {outputs: map[string]string{"a": "1"}, pod: &corev1.Pod{}, want: map[string]string{"a": "1"}},
		"commits join the outputs and win": {
			outputs: map[string]string{"a": "1", "repo.app.commit": "written by the task"},
			pod:     podWithClone(0, "repo.app.commit=0123456789012345678901234567890123456789\nrepo.lib.commit=abc\n"),
			want:    map[string]string{"a": "1", "repo.app.commit": "0123456789012345678901234567890123456789", "repo.lib.commit": "abc"},
		},
		"commits alone": {
			pod:  podWithClone(0, "repo.app.commit=abc\n"),
			want: map[string]string{"repo.app.commit": "abc"},
		},
		"a broken message": {pod: podWithClone(0, "garbage"), wantErr: "the clone's commits: line 1"},
	} {
		t.Run(name, func(t *testing.T) {
			got, perr := withRepoCommits(tc.outputs, tc.pod)
			if tc.wantErr != "" {
				if perr == nil || !strings.Contains(perr.Message, tc.wantErr) {
					t.Fatalf("error %+v, want one saying %q", perr, tc.wantErr)
				}
				return
			}
			if perr != nil {
				t.Fatal(perr.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloneFailure(t *testing.T) {
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"no pod":    {},
		"succeeded": {pod: podWithClone(0, "repo.a.commit=abc"), want: ""},
		"failed with a message": {
			pod:  podWithClone(1, "repository app: https://git.example.com/app.git asks for credentials: name a Secret with username and password in secretRef\n"),
			want: "cloning spec.repos failed: repository app: https://git.example.com/app.git asks for credentials: name a Secret with username and password in secretRef",
		},
		"killed": {pod: podWithClone(137, ""), want: "cloning spec.repos failed: exit code 137"},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, cloneFailure(tc.pod)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
