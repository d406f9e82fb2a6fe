package schedext

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitArgs(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []string
		wantErr bool
	}{
		"empty":                  {in: "", want: nil},
		"words":                  {in: "  --slice-us 20000\t--greedy ", want: []string{"--slice-us", "20000", "--greedy"}},
		"single quotes":          {in: `--name 'two words' x`, want: []string{"--name", "two words", "x"}},
		"double quotes":          {in: `--name "a \"b\" \c"`, want: []string{"--name", `a "b" \c`}},
		"empty quoted word":      {in: `a '' b`, want: []string{"a", "", "b"}},
		"backslash outside":      {in: `a\ b c`, want: []string{"a b", "c"}},
		"joined quotes":          {in: `--x='1 2'"3"`, want: []string{"--x=1 23"}},
		"unclosed quote":         {in: `--x 'oops`, wantErr: true},
		"trailing backslash":     {in: `a\`, wantErr: true},
		"nothing is expanded":    {in: `$HOME *`, want: []string{"$HOME", "*"}},
		"double quoted dollar":   {in: `"\$HOME"`, want: []string{"$HOME"}},
		"single quote in double": {in: `"it's"`, want: []string{"it's"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := splitArgs(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
