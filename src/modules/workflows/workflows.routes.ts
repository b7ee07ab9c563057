import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { workflowFields } from './fields.js';
import { addStep, addTransition, patchStep, removeStep, removeTransition } from './steps.service.js';
import {
  AddedStep,
  AddStepBody,
  AddTransitionBody,
  CreateWorkflowBody,
  DeleteStepQuery,
  FieldsQuery,
  ListWorkflowsQuery,
  Step,
  StepParams,
  Transition,
  TransitionParams,
  UpdateStepBody,
  UpdateWorkflowBody,
  Workflow,
  WorkflowDetail,
  WorkflowFields,
  WorkflowIdParams,
  WorkflowList,
} from './workflows.schema.js';
import { createWorkflow, duplicateWorkflow, getWorkflow, listWorkflows, patchWorkflow, removeWorkflow } from './workflows.service.js';

/** Workflow definitions: workflows, steps, transitions (dashboard API: secret key, or session + X-Project-Id). */
export async function workflowsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Workflows'];
  const { db } = deps;
  const params = WorkflowIdParams;

  r.get('/workflows', {
    schema: { tags, summary: 'Page list of workflows with step and execution counts, newest first by default', querystring: ListWorkflowsQuery, response: { 200: WorkflowList } },
    handler: async (request) => listWorkflows(db, projectIdOf(request), request.query),
  });

  r.get('/workflows/fields', {
    schema: { tags, summary: 'Fields usable in CONDITION step filters: contact fields, data keys, and with eventName the keys seen on that event', querystring: FieldsQuery, response: { 200: WorkflowFields } },
    handler: async (request) => workflowFields(db, projectIdOf(request), request.query.eventName),
  });

  r.post('/workflows', {
    schema: { tags, summary: 'Create a disabled EVENT workflow with its TRIGGER step', body: CreateWorkflowBody, response: { 201: Workflow } },
    handler: async (request, reply) => reply.code(201).send(await createWorkflow(db, projectIdOf(request), request.body)),
  });

  r.get('/workflows/:id', {
    schema: { tags, summary: 'The workflow with its steps (per-step stats) and transitions', params, response: { 200: WorkflowDetail } },
    handler: async (request) => getWorkflow(db, projectIdOf(request), request.params.id),
  });

  r.patch('/workflows/:id', {
    schema: {
      tags,
      summary: 'Update name, description, enabled (checks the graph: 422 naming steps), allowReentry, trigger (409 on an enabled workflow with active executions)',
      params,
      body: UpdateWorkflowBody,
      response: { 200: Workflow },
    },
    handler: async (request) => patchWorkflow(db, projectIdOf(request), request.params.id, request.body),
  });

  r.delete('/workflows/:id', {
    schema: { tags, summary: 'Delete; 409 while executions are active (details.activeExecutions)', params },
    handler: async (request, reply) => {
      await removeWorkflow(db, projectIdOf(request), request.params.id);
      return reply.code(204).send();
    },
  });

  r.post('/workflows/:id/duplicate', {
    schema: { tags, summary: 'A disabled copy "<name> (Copy)" with every step and transition', params, response: { 201: Workflow } },
    handler: async (request, reply) => reply.code(201).send(await duplicateWorkflow(db, projectIdOf(request), request.params.id)),
  });

  r.post('/workflows/:id/steps', {
    schema: {
      tags,
      summary: 'Add a step (any type but TRIGGER); its config is validated for its type (422 naming config.<field>); with insert or after, linked into the graph in the same transaction',
      params,
      body: AddStepBody,
      response: { 201: AddedStep },
    },
    handler: async (request, reply) => reply.code(201).send(await addStep(db, projectIdOf(request), request.params.id, request.body)),
  });

  r.patch('/workflows/:id/steps/:stepId', {
    schema: { tags, summary: 'Rename, move, or replace the config (409 while executions are at the step); the type never changes', params: StepParams, body: UpdateStepBody, response: { 200: Step } },
    handler: async (request) => patchStep(db, projectIdOf(request), request.params.id, request.params.stepId, request.body),
  });

  r.delete('/workflows/:id/steps/:stepId', {
    schema: { tags, summary: 'Delete a step and its transitions; splice=true reconnects its one predecessor to its one successor', params: StepParams, querystring: DeleteStepQuery },
    handler: async (request, reply) => {
      await removeStep(db, projectIdOf(request), request.params.id, request.params.stepId, request.query.splice);
      return reply.code(204).send();
    },
  });

  r.post('/workflows/:id/transitions', {
    schema: {
      tags,
      summary: 'Link two steps: branch yes/no from CONDITION, event/timeout from WAIT_FOR_EVENT, none otherwise; no cycles, nothing into the TRIGGER',
      params,
      body: AddTransitionBody,
      response: { 201: Transition },
    },
    handler: async (request, reply) => reply.code(201).send(await addTransition(db, projectIdOf(request), request.params.id, request.body)),
  });

  r.delete('/workflows/:id/transitions/:transitionId', {
    schema: { tags, summary: 'Delete a transition', params: TransitionParams },
    handler: async (request, reply) => {
      await removeTransition(db, projectIdOf(request), request.params.id, request.params.transitionId);
      return reply.code(204).send();
    },
  });
}
