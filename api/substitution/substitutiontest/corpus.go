// Package substitutiontest holds the strings api/substitution is tested
// with, so that other checks of the same grammar are tested with them too:
// the fuzz test seeds its corpus with them, and the
// kubectl-sched-workflow-references admission policy (config/policy) must
// give the same verdict as substitution.ValidateWorkflow for each, in a
// step of spec.steps, in a finally step, in a forEach step and as a
// forEach.from (api/v1alpha1's
// TestWorkflowReferencesPolicyAgreesWithSubstitution).
package substitutiontest

import (
	"math/rand/v2"
	"strings"
)

// FuzzSeeds are hand-picked strings for FuzzExpand.
var FuzzSeeds = []string{
	"", "plain", "$", "$$", "$$$", "${", "$${", "$$${", "}", "{}", "${}", "$}", "$ {",
	"${steps.0.output.x}", "${steps.build.output.a.b}", "${params.p}",
	"$${steps.0.output.x}", "$$${params.p}", "${params.a}${params.b}",
	"${steps.01.output.x}", "${steps.a.outputs.x}", "${steps.a", "${foo}",
	"${steps.${params.a}.output.x}", "${params.a.b}", "${steps.-1.output.x}",
	"héllo ${params.a} ✓\n\"q\"\r\n", "\xff${params.a}\xfe", "$\x00{", "${params.a}\x00",
	"${steps.99999999999999999999.output.x}",
	"${workflow.phase}", "$${workflow.phase}", "${workflow.name}",
	"${item}", "$${item}", "${item.x}", "${items}",
}

// Tricky are cases a re-implementation of the grammar is likely to get
// wrong: nesting, unterminated references, runs of '$', references side by
// side, lengths at and past the limits, unicode, and text that only looks
// like a reference.
var Tricky = []string{
	// Nested and unterminated.
	"${params.${params.p}}", "${steps.0.output.${params.p}}", "${${params.p}}", "${params.p",
	"x ${steps.fetch", "${steps.fetch.output.x", "${params.p ${params.p}", "${params.p$${x}",
	"${params.p}}", "${params.p}{", "}${params.p}", "${params.p}${", "${params.p}$",
	// Escapes and runs of '$'.
	"$${params.nope}", "$$${params.nope}", "$$$${params.nope}", "$$$$${params.nope}",
	"$${steps.9.output.x}${params.p}", "$${foo", "$${", "a$$b", "$$$", "$ ${params.p}",
	"$${params.p}${params.nope}", "$$${steps.later.output.x}", "$${${params.nope}}",
	"$HOME ${params.p} $(date) $((1+2)) $1", "$${{ name }}", "${{ name }}",
	// Several references side by side: each one must be checked.
	"${params.p}${params.nope}", "${params.p}${params.p}${params.nope}", "${params.p}${foo}",
	"${steps.0.output.x}${steps.9.output.x}", "${steps.0.output.x}${steps.later.output.x}",
	"${params.p}${steps.9.output.x}", "${steps.0.output.x}${params.nope}",
	"${steps.fetch.output.x}${steps.use.output.x}", "a${params.p}b${params.nope}c",
	// Unknown, later and own steps; indexes.
	"${steps.nope.output.x}", "${steps.later.output.x}", "${steps.use.output.x}",
	"${steps.2.output.x}", "${steps.3.output.x}", "${steps.1000.output.x}",
	"${steps.00.output.x}", "${steps.007.output.x}", "${steps.+1.output.x}", "${steps. 0.output.x}",
	"${steps.0x1.output.x}", "${steps.1e0.output.x}", "${steps.١.output.x}",
	// Words and keys.
	"${steps.fetch.output.x.}", "${steps.fetch.output..x}", "${steps.fetch.output._}",
	"${steps.fetch.output.-x}", "${steps.fetch.output.x-}", "${steps.fetch.output.X_9.y-z}",
	"${steps.fetch.Output.x}", "${steps.fetch.output.x y}", "${steps.fetch.output.x\n}",
	"${steps.fetch..x}", "${steps.fetch.output}", "${steps.fetch.output.}", "${steps.}",
	// Params.
	"${params.P}", "${params.p-}", "${params._}", "${params.-p}", "${params.1p}", "${params.p.}",
	"${params. p}", "${params.p }", "${params}", "${params.}", "${PARAMS.p}", "${Steps.0.output.x}",
	// Long names: at and past 63 characters.
	"${steps.fetch.output." + strings.Repeat("k", 63) + "}",
	"${steps.fetch.output." + strings.Repeat("k", 64) + "}",
	"${steps.fetch.output.a." + strings.Repeat("k", 61) + "}",
	"${steps." + strings.Repeat("s", 40) + ".output.x}",
	"${steps." + strings.Repeat("s", 63) + ".output.x}",
	"${steps." + strings.Repeat("s", 64) + ".output.x}",
	"${params." + strings.Repeat("p", 63) + "}",
	"${params." + strings.Repeat("p", 64) + "}",
	"${params.p}" + strings.Repeat("x", 4000),
	strings.Repeat("${params.p}", 300),
	strings.Repeat("$${", 1000),
	strings.Repeat("${", 1000),
	strings.Repeat("$", 4000) + "{",
	// Unicode and control characters.
	"日本 ${params.p} ✓", "${params.é}", "${steps.fétch.output.x}", "${steps.fetch.output.ké}",
	"${params.p\u200b}", "\u200b${params.nope}", "＄{params.nope}", "$｛params.nope}",
	"${params.p}\u0000${params.nope}", "\t${params.p}\r\n", "\U0001F600${steps.0.output.x}",
	// The workflow's phase (finally steps only), and what only looks like it.
	"${workflow.phase}", "phase=${workflow.phase}.", "${workflow.phase}${params.p}", "${workflow.phase}${params.nope}",
	"${workflow.Phase}", "${workflow.phase.x}", "${workflow.phase }", "${workflow}", "${workflow.}", "${workflows.phase}",
	"${Workflow.phase}", "${workflow.phase", "${workflow.${params.p}}", "$${workflow.phase}${workflow.phase}",
	"${steps.workflow.output.phase}", "${params.workflow}", "${workflow.phase}${steps.0.output.x}", "${workflow.phase}${steps.9.output.x}",
	// A forEach step's item (its task only), and what only looks like it.
	"${item}", "--region=${item}", "${item}${item}", "${item}${params.p}", "${item}${params.nope}", "${item}${steps.0.output.x}",
	"${item}${steps.later.output.x}", "$${item}", "$${item}${item}", "$$${item}", "${Item}", "${ITEM}", "${item }", "${ item}",
	"${item.}", "${item.x}", "${item.0}", "${items}", "${itemx}", "${item", "${item${params.p}}", "${steps.item.output.x}",
	"${params.item}", "${workflow.item}", "${item}${workflow.phase}", "item", "{item}", "$item", "${item}}",
}

// Generated returns n strings made of the pieces of the grammar, put
// together at random from a fixed seed, so every run tests the same ones.
func Generated(n int) []string {
	pieces := []string{
		"$", "$", "$$", "${", "${", "$${", "}", "}", "{", ".",
		"steps.", "steps.", "params.", "params.", "steps", "params",
		"0", "1", "2", "01", "9", "fetch", "build", "use", "later", "nope",
		".output.", ".output.", "output.", ".outputs.", "output",
		"x", "p", "a", "tag", "_k", "k.v", "-", "é", " ", "\n",
		"workflow.", "workflow.phase", "phase", "item", "item}", "${item}",
	}
	r := rand.New(rand.NewPCG(24, 2024))
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		out = append(out, b.String())
	}
	return out
}

// References returns well-formed and nearly well-formed references: every
// step part (index, name, unknown, bad) with ".output.x", and each of a few
// references with text before and after it that may change how it is read.
func References() []string {
	var out []string
	steps := []string{"0", "1", "2", "3", "9", "01", "10", "fetch", "build", "use", "later", "nope",
		"Fetch", "1a", "-1", "a-", "a--b", "f_x", "é", ""}
	for _, s := range steps {
		out = append(out, "${steps."+s+".output.x}")
	}
	for _, w := range []string{"output", "outputs", "result", ""} {
		for _, k := range []string{"x", "image.tag", "_A-b.9", "1x", ".x", "a/b", ""} {
			out = append(out, "${steps.fetch."+w+"."+k+"}")
		}
	}
	for _, p := range []string{"p", "a", "tag", "_my-Param2", "nope", "P", "a.b", "1a", "-a", ""} {
		out = append(out, "${params."+p+"}")
	}
	for _, w := range []string{"phase", "Phase", "name", "phase.x", ""} {
		out = append(out, "${workflow."+w+"}")
	}
	refs := []string{"${params.p}", "${params.nope}", "${steps.0.output.x}", "${steps.later.output.x}", "${foo}", "${params.p", "${workflow.phase}", "${item}"}
	before := []string{"", "$", "$$", "$$$", "a", "}", "${", "{", "\\"}
	after := []string{"", "}", "$", "{", "${params.p}", "${params.nope}", "${", "$${"}
	for _, ref := range refs {
		for _, b := range before {
			for _, a := range after {
				out = append(out, b+ref+a)
			}
		}
	}
	return out
}

// Corpus is every string above: FuzzSeeds, Tricky, References and 300
// Generated ones.
func Corpus() []string {
	var out []string
	out = append(out, FuzzSeeds...)
	out = append(out, Tricky...)
	out = append(out, References()...)
	return append(out, Generated(300)...)
}
