package kinds

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

func TestDocuments(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []string
	}{
		"one yaml":             {in: "a: 1\n", want: []string{`{"a":1}`}},
		"leading separator":    {in: "---\na: 1\n---\nb: 2\n", want: []string{`{"a":1}`, `{"b":2}`}},
		"empty and null left":  {in: "a: 1\n---\n# nothing\n---\nnull\n---\nb: 2\n", want: []string{`{"a":1}`, `{"b":2}`}},
		"json stream":          {in: `{"a":1}` + "\n" + `{"b":2}`, want: []string{`{"a":1}`, `{"b":2}`}},
		"nothing":              {in: "", want: nil},
		"only a comment":       {in: "# nothing here\n", want: nil},
		"a list in one object": {in: "items: [1, 2]\n", want: []string{`{"items":[1,2]}`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			docs, err := Documents([]byte(tc.in), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range docs {
				got = append(got, string(d))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDocumentsSyntaxError(t *testing.T) {
	_, err := Documents([]byte("a: [1\n"), "f.yaml")
	var e *cmdutil.Error
	if !errors.As(err, &e) || e.Code != cmdutil.ExitInvalid || e.Hint != "Check the YAML syntax." {
		t.Fatalf("got %v, want an invalid-input error with a hint", err)
	}
	if want := "f.yaml is not valid YAML or JSON: "; !strings.HasPrefix(e.Msg, want) {
		t.Errorf("message %q, want it to start %q", e.Msg, want)
	}
}

func TestDecodeStrict(t *testing.T) {
	cases := map[string]struct {
		doc     string
		wantErr string
		want    schedv1.AgentTaskSpec
	}{
		"known fields":   {doc: `{"spec":{"image":"busybox","args":["a"]}}`, want: schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"a"}}},
		"unknown field":  {doc: `{"spec":{"image":"busybox","imag":"x"}}`, wantErr: `unknown field "spec.imag"`},
		"two unknown":    {doc: `{"spec":{"imag":"x","comand":["y"]}}`, wantErr: `unknown field "spec.imag"; unknown field "spec.comand"`},
		"duplicate":      {doc: `{"spec":{"image":"a","image":"b"}}`, wantErr: `duplicate field "spec.image"`},
		"wrong type":     {doc: `{"spec":{"image":3}}`, wantErr: "cannot unmarshal number"},
		"not an object":  {doc: `[1]`, wantErr: "cannot unmarshal array"},
		"empty is valid": {doc: `{}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			task := &schedv1.AgentTask{}
			err := DecodeStrict([]byte(tc.doc), task)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one holding %q", err, tc.wantErr)
			case tc.wantErr == "":
				if diff := cmp.Diff(tc.want, task.Spec); diff != "" {
					t.Errorf("spec (-want +got):\n%s", diff)
				}
			}
		})
	}
}
