// Package substitution defines the references a Workflow step may hold in
// its strings, and resolves them. The operator resolves them when it starts a
// step; the kubectl plugin validates them before a workflow is submitted. Both
// use this package, so what one accepts the other does too.
//
// # References
//
// A step's image, command, args and env values may hold:
//
//	${steps.N.output.KEY}     output KEY of step N, counted from 0
//	${steps.NAME.output.KEY}  output KEY of the step named NAME
//	${params.NAME}            the value of workflow param NAME
//	${workflow.phase}         finally steps only: the phase the workflow has
//	                          without them (Succeeded, Failed, Timeout or
//	                          Cancelled)
//	${item}                   forEach steps only: the item the task runs for
//
// N is a decimal number without leading zeros ("0", "1", "12"; not "01").
// NAME of a step is its name, a DNS label: lowercase letters, digits and '-',
// starting with a letter. Since step names start with a letter, a number
// always means an index.
//
// KEY is what the step wrote to its termination message: it starts with a
// letter or '_', then holds letters, digits, '_', '.' and '-', at most 63
// characters in all. A KEY may contain dots: ${steps.build.output.image.tag}
// is the key "image.tag".
//
// A step may only use outputs of the steps before it (with dependsOn, of
// the steps it depends on, directly or through others). A finally step
// may use the outputs of any step of spec.steps (N counts those only) and,
// by name, of the finally steps it depends on; an output a step did not
// produce (it failed, or was skipped) fails the finally step that uses it
// with reason MissingOutput. A param NAME must be declared in spec.params.
//
// # Loops
//
// A step with forEach runs its task once per item, ${item} in its task's
// strings (and nowhere else) replaced by the item. forEach.from holds
// exactly one reference, and nothing else: ${steps.N.output.KEY},
// ${steps.NAME.output.KEY} or ${params.NAME}, under the rules above for the
// step that holds it; its value must be a JSON array of at most 100
// strings ([ResolveItems]). A forEach step's outputs are JSON arrays, each
// item's value of the key in item order and null for an item that did not
// write it; a forEach step that ran no items reads [] for every key.
// Items are text, like outputs: one holding "${...}" arrives as written.
//
// # Literal text
//
// "$${" writes a literal "${": "$${steps.0.output.x}" is the text
// "${steps.0.output.x}", not a reference. Any other '$' is literal: "$HOME",
// "$$" and a '$' at the end stay as they are. Use [Escape] to quote text that
// must not be read as references.
//
// Anything else in "${...}" is an error, reported with its byte offset:
// "${foo}", "${steps.a.outputs.x}" (the word is "output"), "${steps.01.output.x}",
// "${params.}" and a "${" without its closing "}".
//
// # Outputs are inserted as they are
//
// Substitution is a single pass. A value put in place of a reference is never
// read again, so an output or param value holding "${...}" or "$${" arrives
// in the step exactly as written. A step cannot inject references into later
// steps through its outputs.
package substitution
