package celexpr

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileInput is what a when reads at its largest: step a a forEach step
// with outputs of MaxForEachOutputBytes, step b a task with outputs of
// MaxOutputBytes, params of MaxParamBytes.
func hostileInput() Input {
	big := strings.Repeat("a", MaxForEachOutputBytes)
	commas := strings.Repeat(",", MaxForEachOutputBytes)
	wide := strings.Repeat("é", MaxForEachOutputBytes/2)
	a := map[string]string{"big": big, "commas": commas, "wide": wide}
	for k := len(a); k < MaxOutputs; k++ {
		a[fmt.Sprintf("k%02d", k)] = big
	}
	b := map[string]string{"big": big[:MaxOutputBytes], "commas": commas[:MaxOutputBytes]}
	return Input{
		Steps:  map[string]Step{"a": {Phase: "Succeeded", Outputs: a}, "b": {Phase: "Succeeded", Outputs: b}},
		Params: map[string]string{"p": big[:MaxParamBytes]},
		Phase:  "Failed",
	}
}

// hostile are expressions written to make one evaluation allocate, or
// work, as much as it can. {A} is steps.a.outputs.big (32 KiB of 'a'), {C}
// steps.a.outputs.commas (32 KiB of ','), {W} steps.a.outputs.wide (16 Ki
// two-byte characters).
var hostile = map[string]string{
	"replace chained 16 times":                   "'aaaa'" + strings.Repeat(".replace('a','aaaa')", 16) + " != ''",
	"replace chained on an output":               "{A}" + strings.Repeat(".replace('a','aaaa')", 12) + " != ''",
	"replace by an output":                       "{A}.replace('a', {A}).size() > 0",
	"replace of nothing by an output":            "{A}.replace('', {A}).size() > 0",
	"replace with a count":                       "{A}.replace('a', {A}, 100).size() > 0",
	"split into characters, joined by an output": "{A}.split('').join({A}) != ''",
	"an output per character, joined":            "{A}.split('').map(x, {A}).join() != ''",
	"an output per character, joined by one":     "{C}.split(',').map(x, {A}).join({A}).size() > 0",
	"split of a join":                            "{A}.split('').join(',').split(',').join({A}).size() > 0",
	"list concatenation":                         "({C}.split(',') + {C}.split(',') + {C}.split(',') + {C}.split(',')).map(x, {A}).join().size() > 0",
	"a loop over a split in a loop":              "{A}.split('').all(x, {A}.split('').all(y, x == y))",
	"a loop over a split, splitting again":       "{C}.split(',').exists(x, {C}.split(',').size() == 0)",
	"concatenation in a loop":                    "{A}.split('').exists(x, (x + {A} + {A} + {A} + {A}).size() == 0)",
	"concatenation kept in a loop":               "{A}.split('').map(x, {A} + x).size() > 0",
	"doubling through loop variables": "[{A} + {A}].all(a, [a + a].all(b, [b + b].all(c, [c + c].all(d, [d + d].all(e, [e + e].all(f, [f + f].all(g, " +
		"[g + g].all(h, [h + h].all(i, [i + i].all(j, [j + j].all(k, (k + k).size() > 0)))))))))))",
	"a long chain of +":            "[{A}].all(x, (x" + strings.Repeat("+x", 200) + ").size() > 0)",
	"lowerAscii in a loop":         "{A}.split('').exists(x, {A}.lowerAscii() == x)",
	"upperAscii of wide in a loop": "{W}.split('').exists(x, {W}.upperAscii() == x)",
	"charAt in a loop":             "{W}.split('').exists(x, {W}.charAt(16000) == 'z')",
	"indexOf in a loop":            "{W}.split('').exists(x, {W}.indexOf('z') > 0)",
	"lastIndexOf in a loop":        "{W}.split('').exists(x, {W}.lastIndexOf('z') > 0)",
	"substring in a loop":          "{W}.split('').exists(x, {W}.substring(1) == x)",
	"trim in a loop":               "{A}.split('').exists(x, {A}.trim() == x)",
	"contains in a loop":           "{A}.split('').exists(x, {A}.contains({A} + 'b'))",
	"matches in a loop":            "{A}.split('').exists(x, {A}.matches('^(a|aa)*b$'))",
	"in over a list of outputs":    "{A} in {A}.split('').map(x, {A} + '')",
	"equal lists of outputs":       "{A}.split('').map(x, {A} + '') == {A}.split('').map(x, {A} + '')",
	"every output, concatenated":   "steps.a.outputs.all(k, (steps.a.outputs[k] + steps.a.outputs[k] + steps.a.outputs[k]).size() > 0)",
	"params and outputs":           "params.p.split('').all(x, (x + params.p + {A}).size() > 0)",
	"bytes concatenation":          "[bytes({A})].all(b, (b + b + b + b + b + b + b + b + b + b + b + b + b + b + b + b).size() > 0)",
	"string conversions":           "{A}.split('').all(x, string(bytes({A} + x)).size() > 0)",
	"optional values":              "{A}.split('').all(x, optional.of({A} + x).orValue('').size() > 0)",
	"a map literal of outputs":     "{A}.split('').all(x, {x: {A} + x, 'k': {A}}.size() > 0)",
}

// expand writes A, C and W out.
func expand(expr string) string {
	return strings.NewReplacer("{A}", "steps.a.outputs.big", "{C}", "steps.a.outputs.commas", "{W}", "steps.a.outputs.wide").Replace(expr)
}

// allocated is what f allocates, in bytes.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileExpressions evaluates each hostile expression with what it
// reads at its largest, first past the estimate (the estimate's limit
// lifted, so only the evaluation's own bounds hold it), and measures what
// it allocates: never more than MaxEvalBytes. Then it compiles each as a
// workflow would: the estimate refuses those that could go far.
func TestHostileExpressions(t *testing.T) {
	in := hostileInput()
	var most uint64
	for name, expr := range hostile {
		expr := expand(expr)
		if len(expr) > MaxLength {
			t.Fatalf("%s: %d characters, more than a when may have", name, len(expr))
		}
		x, err := compile(expr, Main, func([]string) sizes { return largest }, math.MaxUint64)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var got bool
		var evalErr error
		start := time.Now()
		bytes := allocated(func() { got, evalErr = x.Eval(in) })
		took := time.Since(start)
		most = max(most, bytes)
		outcome := fmt.Sprint(got)
		if evalErr != nil {
			outcome = evalErr.Error()
			if len(outcome) > 90 {
				outcome = outcome[:90] + "..."
			}
		}
		_, estErr := Compile(expr, Main)
		t.Logf("%-45s %8.2f MiB %8.1f ms  estimate %-8s %s", name, float64(bytes)/(1<<20), float64(took.Microseconds())/1000,
			map[bool]string{true: "refused", false: "passed"}[estErr != nil], outcome)
		if bytes > MaxEvalBytes {
			t.Errorf("%s allocated %d bytes, more than MaxEvalBytes (%d)", name, bytes, MaxEvalBytes)
		}
	}
	t.Logf("most allocated by one evaluation: %.2f MiB (MaxEvalBytes %d MiB)", float64(most)/(1<<20), MaxEvalBytes>>20)
}

// FuzzEval evaluates what the fuzzer makes of the hostile expressions,
// past the estimate, with what they read at its largest: none allocates
// more than MaxEvalBytes. (go test -fuzz=FuzzEval ./api/celexpr/ runs
// it past its seeds.)
func FuzzEval(f *testing.F) {
	for _, expr := range hostile {
		f.Add(expand(expr))
	}
	in := hostileInput()
	f.Fuzz(func(t *testing.T, expr string) {
		x, err := compile(expr, Main, func([]string) sizes { return largest }, math.MaxUint64)
		if err != nil {
			return
		}
		if bytes := allocated(func() { _, _ = x.Eval(in) }); bytes > MaxEvalBytes {
			t.Errorf("%q allocated %d bytes, more than MaxEvalBytes (%d)", expr, bytes, MaxEvalBytes)
		}
	})
}

// FuzzGuards: the sizes the guards count before replace and split build
// are the sizes they build.
func FuzzGuards(f *testing.F) {
	for _, s := range []string{"", "a", "aaaa", "a,b,,c", "héllo wörld", "\xff\xfe", "日本語,日本"} {
		for _, sep := range []string{"", "a", ",", "ö", "日本"} {
			f.Add(s, sep, "xyz", int64(-1))
			f.Add(s, sep, "", int64(2))
		}
	}
	f.Fuzz(func(t *testing.T, s, old, repl string, n int64) {
		if len(s) > 4096 || len(repl) > 64 || n > 1<<20 || n < -1 {
			return
		}
		if got, want := replacedSize(s, old, repl, n), len(strings.Replace(s, old, repl, int(n))); got != want {
			t.Errorf("replacedSize(%q, %q, %q, %d) = %d; strings.Replace builds %d", s, old, repl, n, got, want)
		}
		if got, want := splitParts(s, old, n), len(strings.SplitN(s, old, int(n))); got != want {
			t.Errorf("splitParts(%q, %q, %d) = %d; strings.SplitN returns %d", s, old, n, got, want)
		}
	})
}
