// Package v1alpha1 holds the kubectl-sched API: UserDeployment, AgentTask,
// Workflow, CronWorkflow and SchedExt in the sched.kubectl-sched.dev group.
//
// # Where validation lives
//
// Every rule has one home, chosen by what it needs to know. Before adding
// one, find its layer here; a rule checked in two layers needs a test that
// holds them to the same verdict.
//
//  1. The CRD schema: shape and per-object rules. The +kubebuilder markers
//     in this package (types, enums, patterns, lengths, list sizes and
//     keys) and their XValidation CEL rules (between fields of one object,
//     immutability with self == oldSelf), generated into config/crd/bases.
//     The API server applies them to every write by everyone, status
//     included (transition rules too, though a status write cannot change
//     the spec), so they must only look at the object and stay cheap: the
//     API server estimates their cost when the CRD is installed
//     (bounds_test.go and TestLargestAgentTaskAccepted hold the objects at
//     every bound). validation_test.go tries each rule.
//
//  2. The ValidatingAdmissionPolicies in config/policy (installed with the
//     CRDs by `kubectl sched install`): rules that need more than the
//     object. The requesting user (reserved_labels, operator_confinement, operator_managed,
//     operator_pod_patch, operator_node_patch, pod_owners) and what RBAC
//     lets them do (cronworkflow_runs: who writes a CronWorkflow may
//     create Workflows; secret_types: who may create a token Secret may
//     request the account's tokens), the namespace's labels and
//     annotations (restricted_pods' opt-out, ingress_hosts' allowed
//     hosts), other objects given as params (the tier's ResourceQuota in
//     tier_placement and tier_ttl, the operator's ConfigMap in
//     ingress_hosts, pod_annotations and workflow_approvals' self-approval),
//     or only the spec's writes, for checks too costly to
//     repeat on every status write (workflow_references on CREATE, and
//     workflow_spec: a Workflow's spec immutable once created), and the user
//     who makes a request (workflow_approvals: a decision in a Workflow's
//     spec.approvals must name request.userInfo.username, so the approver
//     the operator records is the one the API server authenticated, not
//     one a client claims, and be by one of the step's approvers, by user
//     or request.userInfo.groups; spec.requestedBy must name the user who
//     creates the run; workflow_spec keeps recorded decisions and the
//     requester from changing). Each file's header says what it checks and why it is a
//     policy. The operator
//     checks again what it must not get wrong when a policy is missing
//     (operator/podsecurity, the host rules, api/substitution). A
//     CronWorkflow's workflowSpec is checked by the same policies as a
//     Workflow's spec, and each of its runs again when the operator
//     creates it.
//
//  3. api/substitution: the ${steps.N.output.KEY},
//     ${steps.NAME.output.KEY}, ${params.NAME}, ${workflow.phase} and
//     ${item} grammar of Workflow step strings (finally steps' too, and a
//     forEach.from) and the rules on what a reference may name. One Go implementation that the operator
//     runs before it starts a workflow and resolves each step with, and the
//     plugin runs before it submits one, so what one accepts the other
//     does too; its doc.go is the reference. workflow_references.yaml
//     re-states it in CEL for `kubectl apply` users, and
//     TestWorkflowReferencesPolicyAgreesWithSubstitution (in this package)
//     feeds both the corpus in api/substitution/substitutiontest, in a
//     step, in a finally step, in a forEach step and as a forEach.from,
//     and requires the same verdict on every
//     string: api/substitution is right
//     when they differ. Two of its rules are not in the policy (too costly
//     in CEL): with dependsOn, a step may only use the outputs of the steps
//     it depends on, directly or through others; and a step rendered with
//     its params must fit in an AgentTask. The operator fails a workflow
//     that breaks them with reason InvalidSpec before any step runs. The
//     value a forEach.from names is only known when its step starts: the
//     operator reads it then (api/substitution.ResolveItems) and fails the
//     step with reason InvalidItems when it is not a JSON array of at most
//     100 strings. The CRD holds forEach's own shape: one of items and
//     from, its bounds, never on an approval.
//
//  4. api/celexpr: a step's when, a CEL expression. Neither the CRD nor
//     a policy can compile CEL held in a field, so the CRD bounds its
//     length (1024) and refuses a ${...} reference in it, and the real
//     check (parse, type-check against the one environment: steps,
//     params and, in finally steps, workflow; the result a bool; the
//     steps it names only those the step depends on, directly or through
//     others; the params declared) runs in the plugin before it submits
//     and in the operator before any step runs, which fails the workflow
//     with reason InvalidSpec naming spec.steps[i].when and CEL's error.
//     Its cost is estimated there too, with what it reads at its
//     largest, and refused past celexpr.EstimatedCostLimit. Evaluation is
//     bounded by celexpr.CostLimit and MaxResultBytes; an error there (a
//     missing key, a limit) fails the step with reason WhenError.
//
//  5. api/cronschedule: a CronWorkflow's schedule and time zone, parsed
//     as the CronJob controller parses them, by the operator before each
//     run and by the plugin before it submits one. The CRD re-states what
//     CEL can (the fields' shape and ranges) and
//     TestScheduleRulesAgreeWithTheParser holds the two to one verdict on
//     a corpus; what CEL cannot see (a range past its end, February 30, an
//     unknown zone) the operator reports in Ready (InvalidSchedule,
//     UnknownTimeZone) and starts nothing.
//
//  5. The template checker, plugin/internal/templates: on the user's
//     machine, before anything is submitted. It checks a template when it
//     is loaded (placeholders, parameters, types, known fields) and the
//     object it renders (a Workflow through api/substitution), and explains
//     each problem with the template's own names. It adds no rule of its
//     own to the API: what it lets through, the layers above still check.
//
// Messages follow the same path: the plugin's (api/substitution's,
// api/celexpr's, the template checker's) are the most detailed, and the server's name the
// field and the fix in one line.
//
// +kubebuilder:object:generate=true
// +groupName=sched.kubectl-sched.dev
package v1alpha1
