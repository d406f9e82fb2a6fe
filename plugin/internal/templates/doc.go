// Package templates loads, validates and renders kubectl sched templates:
// parameterised objects of the four kubectl-sched kinds.
//
// # Format
//
// A template is one YAML file:
//
//	apiVersion: templates.kubectl-sched.dev/v1
//	kind: Template
//	metadata:
//	  name: web-app                  # a DNS label, at most 63 characters
//	description: A public web front end and an internal API.
//	parameters:
//	  - name: image                  # letters, digits, '_' and '-'; starts with a letter or '_'
//	    description: Image of the web front end.
//	    default: nginx:1.27          # a parameter has a default, or is required
//	  - name: replicas
//	    type: integer                # string (the default), integer, boolean or labels
//	    default: 2
//	  - name: API_TOKEN
//	    secret: true                 # goes into a Secret, never into the object
//	    required: true
//	object:                          # the object to make, with placeholders
//	  apiVersion: sched.kubectl-sched.dev/v1alpha1   # may be omitted
//	  kind: UserDeployment           # UserDeployment, AgentTask, Workflow or SchedExt
//	  spec:
//	    services:
//	      - name: web
//	        image: ${{ image }}
//	        replicas: ${{ replicas }}
//
// # Placeholders
//
// ${{ NAME }} in a string value of the object is replaced by the value of
// parameter NAME; the spaces inside the braces are optional. Two names are
// built in and cannot be declared: ${{ name }} is the object's name and
// ${{ namespace }} its namespace. "$${{" writes a literal "${{". Any other
// "${{" that is not a well-formed placeholder is an error, and so is a
// placeholder in a mapping key.
//
// Substitution happens after the YAML is parsed, so a value can never change
// the object's structure: it only ever becomes a string, or, when a value is
// exactly one placeholder of a typed parameter, an integer (type: integer),
// a boolean (type: boolean) or a map of strings (type: labels, given as
// "k=v,k2=v2"; an empty value is an empty map).
//
// Wherever the operator reads a Workflow's references (the image, command,
// args and env values of the task of a step or finally step, and
// forEach.from), the inserted values are escaped, so a value holding
// "${steps...}", "${params...}" or "${item}" arrives literally and cannot
// inject a reference to another step's outputs. forEach.items are text the
// operator never reads, and take values as they are. A when is CEL, which no
// escaping makes text: a placeholder there is an error; the template gives
// the value to a workflow param and the expression compares params.NAME.
//
// # Secret parameters
//
// A parameter with secret: true is never rendered into the object, and a
// placeholder for it is an error. Its value goes into the Secret
// <name>-secrets, under the parameter's name as key. A UserDeployment gets a
// reference to that Secret in spec.secrets, named "params"; a template may
// declare that entry itself (without secretName) to choose its services,
// mountPath or envPrefix. Other namespaced kinds reference the Secret
// themselves, for example with secretKeyRef name "${{ name }}-secrets".
// SchedExt templates cannot have secret parameters: the kind is cluster
// scoped. Secret parameters take no default and are strings.
//
// # Validation
//
// A template is checked when it is loaded: known fields only, names well
// formed, every placeholder names a declared parameter, every non-secret
// parameter is used, defaults fit their type, and the object, rendered with
// the defaults, decodes into its kind without unknown fields. Rendering is
// strict too: an unknown parameter, a missing required one, or a value that
// does not fit its type is a usage error (exit code 2) listing the
// parameters the template expects.
//
// # Sources
//
// [Source] finds a template by reference. A reference that looks like a path
// (it holds a '/' or ends in .yaml, .yml or .json) is a file, or a folder
// holding exactly one template. Any other reference is a name, looked up in
// this order; the first match wins:
//
//  1. the folders given with --template-dir, in order;
//  2. ConfigMaps labelled kubectl-sched.dev/template=true, key
//     template.yaml, in the kubectl-sched-system namespace: the cluster's
//     shared templates, which its admins write;
//  3. the catalog built into the plugin (catalog/*.yaml);
//  4. the same ConfigMaps in the current namespace.
//
// Local folders come first because the user named them on this command
// line. The cluster's shared templates may replace a built-in one for
// everyone. A namespace's templates come last and never take a name the
// cluster or the catalog has: anyone who may create ConfigMaps in a
// namespace could otherwise make "scx-lavd" mean their own privileged
// DaemonSet for everyone working there. Such a template is ignored with a
// warning naming it; rename it to use it. Every command that renders a
// template says where it came from (Template.Origin, Announce).
// A bare name never reads the working directory: write ./name for that,
// as with `go run`.
package templates
