package task

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestRepoFlag(t *testing.T) {
	for in, want := range map[string]schedv1.Repo{
		"https://git.example.com/team/app.git":             {Name: "app", URL: "https://git.example.com/team/app.git"},
		"https://git.example.com/team/app.git@v1.2":        {Name: "app", URL: "https://git.example.com/team/app.git", Ref: "v1.2"},
		"https://git.example.com/team/app.git:/src/app":    {Name: "app", URL: "https://git.example.com/team/app.git", Path: "/src/app"},
		"https://git.example.com/team/app@release/1:/src":  {Name: "app", URL: "https://git.example.com/team/app", Ref: "release/1", Path: "/src"},
		"http://10.0.0.1:8080/repos/Tools.git@main:/t":     {Name: "tools", URL: "http://10.0.0.1:8080/repos/Tools.git", Ref: "main", Path: "/t"},
		"http://10.0.0.1:8080/repos/tools.git":             {Name: "tools", URL: "http://10.0.0.1:8080/repos/tools.git"},
		"https://git.example.com/team/my_lib.git":          {Name: "repo3", URL: "https://git.example.com/team/my_lib.git"},
		"https://git.example.com/team/1st.git":             {Name: "repo3", URL: "https://git.example.com/team/1st.git"},
		"https://git.example.com/":                         {Name: "repo3", URL: "https://git.example.com/"},
		"https://git.example.com/a/b.git@0123456789abcdef": {Name: "b", URL: "https://git.example.com/a/b.git", Ref: "0123456789abcdef"},
	} {
		got, err := repoFlag(3, in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", in, diff)
		}
	}
}
