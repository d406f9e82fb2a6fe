package substitution

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func stepRef(step string, index int, key, raw string, offset int) Ref {
	return Ref{Kind: StepOutput, Step: step, StepIndex: index, Key: key, Raw: raw, Offset: offset}
}

func paramRef(name, raw string, offset int) Ref {
	return Ref{Kind: Param, StepIndex: -1, Key: name, Raw: raw, Offset: offset}
}

func TestParse(t *testing.T) {
	tests := map[string]struct {
		in   string
		want []Ref
	}{
		"no references":      {in: "plain text", want: nil},
		"empty":              {in: "", want: nil},
		"step by index":      {in: "${steps.0.output.digest}", want: []Ref{stepRef("0", 0, "digest", "${steps.0.output.digest}", 0)}},
		"step index 12":      {in: "x${steps.12.output.k}", want: []Ref{stepRef("12", 12, "k", "${steps.12.output.k}", 1)}},
		"step by name":       {in: "${steps.build-image.output.tag}", want: []Ref{stepRef("build-image", -1, "tag", "${steps.build-image.output.tag}", 0)}},
		"dotted key":         {in: "${steps.a.output.image.tag}", want: []Ref{stepRef("a", -1, "image.tag", "${steps.a.output.image.tag}", 0)}},
		"key characters":     {in: "${steps.a.output._A-b.9}", want: []Ref{stepRef("a", -1, "_A-b.9", "${steps.a.output._A-b.9}", 0)}},
		"param":              {in: "--tag=${params.tag}", want: []Ref{paramRef("tag", "${params.tag}", 6)}},
		"param with _ and -": {in: "${params._my-Param2}", want: []Ref{paramRef("_my-Param2", "${params._my-Param2}", 0)}},
		"several in order": {
			in: "${params.a}/${steps.0.output.b}:${steps.x.output.c}",
			want: []Ref{
				paramRef("a", "${params.a}", 0),
				stepRef("0", 0, "b", "${steps.0.output.b}", 12),
				stepRef("x", -1, "c", "${steps.x.output.c}", 32),
			},
		},
		"adjacent":             {in: "${params.a}${params.b}", want: []Ref{paramRef("a", "${params.a}", 0), paramRef("b", "${params.b}", 11)}},
		"escape is not a ref":  {in: "$${steps.0.output.x}", want: nil},
		"ref after escape":     {in: "$${params.a}${params.b}", want: []Ref{paramRef("b", "${params.b}", 12)}},
		"dollar dollar":        {in: "$$", want: nil},
		"three dollars":        {in: "$$${params.a}", want: nil}, // "$" then the escape "$${"
		"four dollars":         {in: "$$$${params.a}", want: nil},
		"lone dollar then ref": {in: "$ ${params.a}", want: []Ref{paramRef("a", "${params.a}", 2)}},
		"dollar at end":        {in: "cost: 5$", want: nil},
		"shell variables":      {in: "echo $HOME $1 $(date) $", want: nil},
		"brace without dollar": {in: "{steps.0.output.x} {}", want: nil},
		"unicode around":       {in: "héllo ✓ ${params.a} 日本", want: []Ref{paramRef("a", "${params.a}", 11)}},
		"quotes and newlines":  {in: "say \"${params.a}\"\n'${params.b}'\r\n", want: []Ref{paramRef("a", "${params.a}", 5), paramRef("b", "${params.b}", 19)}},
		"zero index":           {in: "${steps.0.output.x}", want: []Ref{stepRef("0", 0, "x", "${steps.0.output.x}", 0)}},
		"workflow phase":       {in: "phase=${workflow.phase}", want: []Ref{{Kind: WorkflowPhase, StepIndex: -1, Key: "phase", Raw: "${workflow.phase}", Offset: 6}}},
		"item":                 {in: "deploy ${item} $${item}", want: []Ref{{Kind: Item, StepIndex: -1, Raw: "${item}", Offset: 7}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, diff)
			}
			for _, r := range got {
				if tc.in[r.Offset:r.Offset+len(r.Raw)] != r.Raw {
					t.Errorf("ref %q is not at offset %d", r.Raw, r.Offset)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]struct {
		in   string
		want SyntaxError
	}{
		"empty":               {in: "a${}", want: SyntaxError{Offset: 1, Text: "${}", Problem: "is empty"}},
		"workflow, not phase": {in: "${workflow.name}", want: SyntaxError{Text: "${workflow.name}", Problem: `names something of the workflow other than its phase; the only one is ${workflow.phase}`}},
		"workflow alone":      {in: "${workflow}", want: SyntaxError{Text: "${workflow}", Problem: `names something of the workflow other than its phase; the only one is ${workflow.phase}`}},
		"unknown root":        {in: "${foo}", want: SyntaxError{Text: "${foo}", Problem: `starts with "foo"; a reference starts with "steps.", "params." or "workflow.", or is ${item}`}},
		"singular step":       {in: "${step.0.output.x}", want: SyntaxError{Text: "${step.0.output.x}", Problem: `starts with "step"; a reference starts with "steps.", "params." or "workflow.", or is ${item}`}},
		"spaces inside":       {in: "${ params.a }", want: SyntaxError{Text: "${ params.a }", Problem: `starts with " params"; a reference starts with "steps.", "params." or "workflow.", or is ${item}`}},
		"outputs":             {in: "${steps.a.outputs.x}", want: SyntaxError{Text: "${steps.a.outputs.x}", Problem: `says "outputs" where it should say "output"`}},
		"steps only":          {in: "${steps}", want: SyntaxError{Text: "${steps}", Problem: "names no step"}},
		"no step":             {in: "${steps..output.x}", want: SyntaxError{Text: "${steps..output.x}", Problem: "names no step"}},
		"no output part":      {in: "${steps.a}", want: SyntaxError{Text: "${steps.a}", Problem: `needs ".output.KEY" after the step`}},
		"wrong word":          {in: "${steps.a.result.x}", want: SyntaxError{Text: "${steps.a.result.x}", Problem: `needs ".output.KEY" after the step`}},
		"empty key":           {in: "${steps.a.output.}", want: SyntaxError{Text: "${steps.a.output.}", Problem: "names no output key"}},
		"no key":              {in: "${steps.a.output}", want: SyntaxError{Text: "${steps.a.output}", Problem: "names no output key"}},
		"bad key start":       {in: "${steps.a.output.1x}", want: SyntaxError{Text: "${steps.a.output.1x}", Problem: `has a bad output key: key "1x" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`}},
		"bad key char":        {in: "${steps.a.output.a/b}", want: SyntaxError{Text: "${steps.a.output.a/b}", Problem: `has a bad output key: key "a/b" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`}},
		"leading zero":        {in: "${steps.01.output.x}", want: SyntaxError{Text: "${steps.01.output.x}", Problem: `has step index "01" with a leading zero; write "1"`}},
		"all zeros":           {in: "${steps.00.output.x}", want: SyntaxError{Text: "${steps.00.output.x}", Problem: `has step index "00" with a leading zero; write "0"`}},
		"huge index":          {in: "${steps.99999999999999999999.output.x}", want: SyntaxError{Text: "${steps.99999999999999999999.output.x}", Problem: `has step index "99999999999999999999", which is too large`}},
		"uppercase step":      {in: "${steps.Build.output.x}", want: SyntaxError{Text: "${steps.Build.output.x}", Problem: `has step "Build", which is neither an index (0, 1, ...) nor a step name (lowercase letters, digits and '-', starting with a letter)`}},
		"step starting digit": {in: "${steps.1a.output.x}", want: SyntaxError{Text: "${steps.1a.output.x}", Problem: `has step "1a", which is neither an index (0, 1, ...) nor a step name (lowercase letters, digits and '-', starting with a letter)`}},
		"negative index":      {in: "${steps.-1.output.x}", want: SyntaxError{Text: "${steps.-1.output.x}", Problem: `has step "-1", which is neither an index (0, 1, ...) nor a step name (lowercase letters, digits and '-', starting with a letter)`}},
		"a part of the item":  {in: "${item.name}", want: SyntaxError{Text: "${item.name}", Problem: "names a part of the item; an item is a string, written ${item}"}},
		"items":               {in: "${items}", want: SyntaxError{Text: "${items}", Problem: `starts with "items"; a reference starts with "steps.", "params." or "workflow.", or is ${item}`}},
		"params only":         {in: "${params}", want: SyntaxError{Text: "${params}", Problem: "names no param"}},
		"params dot":          {in: "${params.}", want: SyntaxError{Text: "${params.}", Problem: "names no param"}},
		"dotted param":        {in: "${params.a.b}", want: SyntaxError{Text: "${params.a.b}", Problem: `has param name "a.b", which is invalid: a param name starts with a letter or '_' and holds only letters, digits, '_' and '-'`}},
		"unterminated":        {in: "x ${steps.a", want: SyntaxError{Offset: 2, Text: "${steps.a", Problem: `has no closing "}"`}},
		"unterminated at end": {in: "${", want: SyntaxError{Text: "${", Problem: `has no closing "}"`}},
		"nested":              {in: "${steps.${params.a}.output.x}", want: SyntaxError{Text: "${steps.", Problem: `has no closing "}" before the next "${"`}},
		"unterminated long": {
			in:   "${params.a " + strings.Repeat("é", 40),
			want: SyntaxError{Text: "${params.a " + strings.Repeat("é", 26) + "...", Problem: `has no closing "}"`},
		},
		"first error wins": {in: "${params.a} ${foo} ${bar", want: SyntaxError{Offset: 12, Text: "${foo}", Problem: `starts with "foo"; a reference starts with "steps.", "params." or "workflow.", or is ${item}`}},
		"newline inside":   {in: "${params.a\n}", want: SyntaxError{Text: "${params.a\n}", Problem: `has param name "a\n", which is invalid: a param name starts with a letter or '_' and holds only letters, digits, '_' and '-'`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			refs, err := Parse(tc.in)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, %v; want a *SyntaxError", tc.in, refs, err)
			}
			if diff := cmp.Diff(tc.want, *se); diff != "" {
				t.Errorf("Parse(%q) error (-want +got):\n%s", tc.in, diff)
			}
			if !strings.HasSuffix(err.Error(), "; "+SyntaxHint) {
				t.Errorf("error %q does not end with the hint", err)
			}
			// Expand must refuse the same strings, before any lookup.
			_, err = Expand(tc.in, func(Ref) (string, error) { t.Fatal("lookup called"); return "", nil })
			if diff := cmp.Diff(se.Error(), fmt.Sprint(err)); diff != "" {
				t.Errorf("Expand error differs from Parse error (-parse +expand):\n%s", diff)
			}
		})
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	_, err := Parse("run ${steps.a.outputs.x}")
	want := `"${steps.a.outputs.x}" at byte 4 says "outputs" where it should say "output"; ` +
		`references are ${steps.N.output.KEY}, ${steps.NAME.output.KEY}, ${params.NAME}, in forEach steps ${item} and, in finally steps, ${workflow.phase}; write $${ for a literal ${`
	if diff := cmp.Diff(want, fmt.Sprint(err)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// values resolves every reference to a fixed string per Raw.
func values(m map[string]string) func(Ref) (string, error) {
	return func(r Ref) (string, error) {
		v, ok := m[r.Raw]
		if !ok {
			return "", fmt.Errorf("no value for %s", r.Raw)
		}
		return v, nil
	}
}

func TestExpand(t *testing.T) {
	vals := map[string]string{
		"${steps.0.output.x}":   "X",
		"${steps.b.output.k.v}": "KV",
		"${params.p}":           "P",
		"${params.empty}":       "",
		"${params.unicode}":     "日本 ✓ é",
		"${params.quoted}":      `"it's" \n`,
		"${params.multiline}":   "line1\nline2\r\n",
		// Values that look like references must come out as written.
		"${params.inject}":  "${steps.0.output.x}",
		"${params.escaped}": "$${params.p}",
		"${params.dollars}": "$$ $ ${",
	}
	tests := map[string]struct {
		in, want string
	}{
		"no dollar":             {in: "plain ✓ text", want: "plain ✓ text"},
		"empty":                 {in: "", want: ""},
		"step index":            {in: "a=${steps.0.output.x}", want: "a=X"},
		"step name dotted key":  {in: "${steps.b.output.k.v}!", want: "KV!"},
		"param":                 {in: "${params.p}${params.p}", want: "PP"},
		"empty value":           {in: "[${params.empty}]", want: "[]"},
		"escape":                {in: "$${steps.0.output.x}", want: "${steps.0.output.x}"},
		"escape then ref":       {in: "$${params.p}=${params.p}", want: "${params.p}=P"},
		"bare escape":           {in: "$${", want: "${"},
		"escape without close":  {in: "$${steps.a", want: "${steps.a"},
		"escape of garbage":     {in: "$${foo}", want: "${foo}"},
		"two dollars":           {in: "$$", want: "$$"},
		"two dollars then text": {in: "a$$b", want: "a$$b"},
		"three dollars brace":   {in: "$$${params.p}", want: "$${params.p}"},
		"four dollars brace":    {in: "$$$${params.p}", want: "$$${params.p}"},
		"lone dollar":           {in: "$ ${params.p} $", want: "$ P $"},
		"dollar at end":         {in: "${params.p}$", want: "P$"},
		"shell":                 {in: `echo "$HOME" '${params.p}' $((1+2))`, want: `echo "$HOME" 'P' $((1+2))`},
		"brace alone":           {in: "{} }{ ${params.p}}", want: "{} }{ P}"},
		"unicode text":          {in: "✓ ${params.unicode} ✓", want: "✓ 日本 ✓ é ✓"},
		"quoted value":          {in: "v=${params.quoted}", want: `v="it's" \n`},
		"newline value":         {in: "${params.multiline}end", want: "line1\nline2\r\nend"},
		"newlines around":       {in: "a\n${params.p}\r\nb", want: "a\nP\r\nb"},
		"value with ref":        {in: "${params.inject}", want: "${steps.0.output.x}"},
		"value with escape":     {in: "${params.escaped}", want: "$${params.p}"},
		"value with dollars":    {in: "${params.dollars}${params.p}", want: "$$ $ ${P"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Expand(tc.in, values(vals))
			if err != nil {
				t.Fatalf("Expand(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Expand(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestExpandLookupErrorPropagates(t *testing.T) {
	sentinel := errors.New("boom")
	_, err := Expand("a ${params.p} b", func(Ref) (string, error) { return "", sentinel })
	if err != sentinel {
		t.Errorf("Expand error = %v, want the lookup's error unchanged", err)
	}
}

// Single pass: a value is never read again, even when it is itself made of
// references, and lookup is called once per reference in the input only.
func TestExpandSinglePass(t *testing.T) {
	var calls []string
	got, err := Expand("${params.a}|${params.b}", func(r Ref) (string, error) {
		calls = append(calls, r.Raw)
		return "${params.a}$${params.b}", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("${params.a}$${params.b}|${params.a}$${params.b}", got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"${params.a}", "${params.b}"}, calls); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
}

func TestEscape(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"none":          {in: "a $b {c}", want: "a $b {c}"},
		"one":           {in: "${x}", want: "$${x}"},
		"already":       {in: "$${x}", want: "$$${x}"},
		"dollar before": {in: "$${", want: "$$${"},
		"many":          {in: "${${", want: "$${$${"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Escape(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Escape(%q) (-want +got):\n%s", tc.in, diff)
			}
			back, err := Expand(got, values(nil))
			if err != nil || back != tc.in {
				t.Errorf("Expand(Escape(%q)) = %q, %v", tc.in, back, err)
			}
		})
	}
}

func TestValidKey(t *testing.T) {
	re := regexp.MustCompile(`^` + KeyPattern + `$`)
	tests := map[string]struct {
		key     string
		wantErr string
	}{
		"simple":      {key: "digest"},
		"underscore":  {key: "_x"},
		"all allowed": {key: "Ab_9.-z"},
		"max length":  {key: strings.Repeat("k", 63)},
		"empty":       {key: "", wantErr: "key is empty"},
		"too long":    {key: strings.Repeat("k", 64), wantErr: `key "` + strings.Repeat("k", 64) + `" is 64 characters; at most 63 are allowed`},
		"digit first": {key: "1a", wantErr: `key "1a" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`},
		"dot first":   {key: ".a", wantErr: `key ".a" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`},
		"dash first":  {key: "-a", wantErr: `key "-a" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`},
		"space":       {key: "a b", wantErr: `key "a b" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`},
		"unicode":     {key: "é", wantErr: `key "é" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`},
		"slash":       {key: "a/b", wantErr: `key "a/b" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := ValidKey(tc.key)
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Errorf("ValidKey(%q) (-want +got):\n%s", tc.key, diff)
			}
			// ValidKey and KeyPattern must agree, since both are exported.
			if want := re.MatchString(tc.key) && len(tc.key) <= MaxKeyLength; want != (err == nil) {
				t.Errorf("ValidKey(%q) = %v, but KeyPattern match = %v", tc.key, err, want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
