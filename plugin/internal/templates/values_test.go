package templates

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

func TestParseSet(t *testing.T) {
	cases := map[string]struct {
		flag    string
		items   []string
		want    map[string]string
		wantErr string
	}{
		"pairs":                     {flag: "--set", items: []string{"a=1", "b=x"}, want: map[string]string{"a": "1", "b": "x"}},
		"value holds '=' and ','":   {flag: "--set", items: []string{"nodes=a=b,c=d"}, want: map[string]string{"nodes": "a=b,c=d"}},
		"empty value":               {flag: "--set", items: []string{"host="}, want: map[string]string{"host": ""}},
		"last wins":                 {flag: "--set", items: []string{"a=1", "a=2"}, want: map[string]string{"a": "2"}},
		"nothing":                   {flag: "--set", want: map[string]string{}},
		"no '='":                    {flag: "--set", items: []string{"novalue"}, wantErr: `bad --set "novalue": want NAME=VALUE`},
		"no name":                   {flag: "--set", items: []string{"=x"}, wantErr: "bad --set item: the name before '=' is empty"},
		"bad name":                  {flag: "--set", items: []string{"a b=x"}, wantErr: `bad --set item: "a b" is not a parameter name`},
		"dotted name":               {flag: "--set", items: []string{"a.b=x"}, wantErr: `"a.b" is not a parameter name`},
		"secret without '=' hidden": {flag: "--secret", items: []string{"ok=1", "hunter2"}, wantErr: "bad --secret item #2: want NAME=VALUE"},
		"secret bad name hidden":    {flag: "--secret", items: []string{"p@ss=word"}, wantErr: "bad --secret item #1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSet(tc.flag, tc.items)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if cmdutil.ExitCode(err) != cmdutil.ExitUsage {
					t.Errorf("exit code %d, want %d", cmdutil.ExitCode(err), cmdutil.ExitUsage)
				}
				if !strings.Contains(err.Error(), "Write "+tc.flag+" NAME=VALUE") {
					t.Errorf("error lacks the expected form: %v", err)
				}
				if tc.flag == "--secret" && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "word")) {
					t.Errorf("error echoes the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValueFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	values := write("values.yaml", "image: nginx:1.27\nreplicas: 3\nmultiZone: true\nnodes:\n  zone: a\n  pool: fast\nhost:\n")
	later := write("later.yaml", "replicas: 4\n")
	password := write("password", "s3cret\n")

	cases := map[string]struct {
		flags       ValueFlags
		wantParams  map[string]string
		wantSecrets map[string]string
		wantErr     string
	}{
		"files, later files and --set in order": {
			flags: ValueFlags{ValuesFiles: []string{values, later}, Set: []string{"image=httpd:2"}},
			wantParams: map[string]string{"image": "httpd:2", "replicas": "4", "multiZone": "true",
				"nodes": "pool=fast,zone=a", "host": ""},
			wantSecrets: map[string]string{},
		},
		"secrets from values and files, kept byte for byte": {
			flags:       ValueFlags{Secret: []string{"A=x=y"}, SecretFile: []string{"B=" + password}},
			wantParams:  map[string]string{},
			wantSecrets: map[string]string{"A": "x=y", "B": "s3cret\n"},
		},
		"a secret given twice": {
			flags:   ValueFlags{Secret: []string{"A=x"}, SecretFile: []string{"A=" + password}},
			wantErr: `secret "A" is given with both --secret and --secret-file`,
		},
		"missing secret file": {
			flags: ValueFlags{SecretFile: []string{"A=" + filepath.Join(dir, "nope")}}, wantErr: "--secret-file A: open",
		},
		"missing values file": {
			flags: ValueFlags{ValuesFiles: []string{filepath.Join(dir, "nope.yaml")}}, wantErr: "cannot read values file",
		},
		"values file that is not a map": {
			flags: ValueFlags{ValuesFiles: []string{write("list.yaml", "- a\n- b\n")}}, wantErr: "values file",
		},
		"values file with a nested value": {
			flags: ValueFlags{ValuesFiles: []string{write("nested.yaml", "a:\n  b:\n    c: d\n")}}, wantErr: "a map's values must be strings",
		},
		"values file with a list": {
			flags: ValueFlags{ValuesFiles: []string{write("listval.yaml", "a: [1, 2]\n")}}, wantErr: "want a string, number, boolean or map",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			params, secrets, err := tc.flags.Values()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || cmdutil.ExitCode(err) != cmdutil.ExitUsage {
					t.Fatalf("error %v (exit %d), want %q with exit 2", err, cmdutil.ExitCode(err), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range secrets {
				got[k] = string(v)
			}
			if diff := cmp.Diff(tc.wantParams, params); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSecrets, got); diff != "" {
				t.Errorf("secrets (-want +got):\n%s", diff)
			}
		})
	}
}
