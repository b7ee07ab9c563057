import type { WorkflowBranch, WorkflowStepType } from '../../db/schema.js';
import { ApiError, ErrorCode, type FieldError, validationError } from '../../http/errors.js';
import { parseStepConfig } from './steps.schema.js';
import type { AddTransitionBody } from './workflows.schema.js';

/**
 * The graph rules (DESIGN §9, docs/workflows.md "Definitions and graph rules") that need no
 * database: branch labels per step type, and what makes a workflow runnable. The service adds
 * those that do (same workflow, cycles, one edge per (step, branch)).
 */

export interface RuleStep {
  id: string;
  type: WorkflowStepType;
  name: string;
  config: Record<string, unknown>;
  templateId?: string | null;
}

export interface RuleEdge {
  fromStepId: string;
  toStepId: string;
  branch: WorkflowBranch | null;
}

const invalid = (field: string, message: string, code = 'invalid_transition') => validationError([{ field, message, code }]);

/** The branches a step's outgoing transitions carry; [] means one unlabelled transition; null none at all. */
export function branchesOf(step: Pick<RuleStep, 'type' | 'config'>): readonly WorkflowBranch[] | null {
  switch (step.type) {
    case 'CONDITION':
      return ['yes', 'no'];
    case 'WAIT_FOR_EVENT':
      return hasTimeout(step.config) ? ['event', 'timeout'] : ['event'];
    case 'EXIT':
      return null;
    default:
      return [];
  }
}

export const hasTimeout = (config: Record<string, unknown>) => typeof config.timeout === 'number' && config.timeout > 0;

/**
 * The branch of a transition body: `branch`, or Plunk's `condition: {branch}` / `waitOutcome:
 * EVENT|TIMEOUT`. Several forms that disagree are a 422.
 */
export function branchOf(body: Pick<AddTransitionBody, 'branch' | 'condition' | 'waitOutcome'>): WorkflowBranch | null {
  const forms: { field: string; branch: WorkflowBranch }[] = [];
  if (body.branch) forms.push({ field: 'branch', branch: body.branch });
  if (body.condition) forms.push({ field: 'condition.branch', branch: body.condition.branch });
  if (body.waitOutcome) forms.push({ field: 'waitOutcome', branch: body.waitOutcome === 'EVENT' ? 'event' : 'timeout' });
  const first = forms[0];
  const other = forms.find((f) => f.branch !== first?.branch);
  if (other) throw invalid(other.field, `Contradicts ${first?.field} ("${first?.branch}")`, 'invalid_value');
  return first?.branch ?? null;
}

/** Why `from → to` (branch) breaks a per-step rule, as a 422; undefined when it does not. */
export function transitionProblem(from: RuleStep, to: RuleStep, branch: WorkflowBranch | null): ApiError | undefined {
  if (from.id === to.id) return invalid('toStepId', 'A step cannot link to itself');
  if (to.type === 'TRIGGER') return invalid('toStepId', 'Nothing can link to the TRIGGER step');
  const allowed = branchesOf(from);
  if (allowed === null) return invalid('fromStepId', `${from.type} steps end the execution: they have no outgoing transitions`);
  if (allowed.length === 0) {
    return branch === null ? undefined : invalid('branch', `${from.type} steps have one outgoing transition, without a branch`);
  }
  if (branch === null) return invalid('branch', `Transitions from a ${from.type} step need a branch: ${allowed.join(' or ')}`, 'required');
  if (!allowed.includes(branch)) {
    const why = from.type === 'WAIT_FOR_EVENT' && branch === 'timeout' ? ' (the step has no timeout: set config.timeout first)' : '';
    return invalid('branch', `A ${from.type} step's branches are ${allowed.join(' and ')}${why}`, 'invalid_value');
  }
  return undefined;
}

/** A new config for a step with these outgoing edges: a `timeout` edge needs the timeout kept. */
export function configKeepsEdges(step: Pick<RuleStep, 'type'>, config: Record<string, unknown>, outgoing: readonly RuleEdge[]): ApiError | undefined {
  if (step.type === 'WAIT_FOR_EVENT' && !hasTimeout(config) && outgoing.some((e) => e.branch === 'timeout')) {
    return new ApiError(409, ErrorCode.CONFLICT, 'The step has a timeout transition: delete it before removing the timeout', {
      details: { branch: 'timeout' },
    });
  }
  return undefined;
}

/**
 * What keeps an enabled workflow from running, one field error per problem, named
 * `steps.<stepId>…`: a trigger with nowhere to go, a SEND_EMAIL whose template is not in the
 * project, a stored config its type no longer accepts, an edge its step no longer allows.
 */
export function runnableProblems(steps: readonly RuleStep[], edges: readonly RuleEdge[], templates: ReadonlySet<string>): FieldError[] {
  const errors: FieldError[] = [];
  const byId = new Map(steps.map((s) => [s.id, s]));
  const label = (s: RuleStep) => `${s.type} step${s.name ? ` "${s.name}"` : ''}`;
  for (const step of steps) {
    const at = `steps.${step.id}`;
    const out = edges.filter((e) => e.fromStepId === step.id);
    if (step.type === 'TRIGGER' && out.length === 0) {
      errors.push({ field: at, message: 'The TRIGGER step links to no step: add a transition from it', code: 'unreachable' });
    }
    const parsed = parseStepConfig(step.type, step.config);
    if (parsed.errors) {
      for (const e of parsed.errors) errors.push({ field: `${at}.${e.field}`, message: `${label(step)}: ${e.message}`, code: e.code });
      continue;
    }
    if (step.type === 'SEND_EMAIL' && (!step.templateId || !templates.has(step.templateId))) {
      errors.push({ field: `${at}.config.templateId`, message: `${label(step)}: its template does not exist`, code: 'not_found' });
    }
    for (const e of out) {
      const to = byId.get(e.toStepId);
      const problem = to && transitionProblem(step, to, e.branch);
      if (problem) errors.push({ field: `${at}.transitions`, message: `${label(step)}: ${problem.errors?.[0]?.message ?? problem.message}`, code: 'invalid_transition' });
    }
  }
  return errors;
}
