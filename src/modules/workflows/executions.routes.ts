import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import {
  CancelAllResult,
  ExecutionParams,
  ListExecutionsQuery,
  StartExecutionBody,
  WorkflowExecution,
  WorkflowExecutionDetail,
  WorkflowExecutionList,
} from './executions.schema.js';
import { cancelAllExecutions, cancelExecution, getExecution, listExecutions, startExecution } from './executions.service.js';
import { WorkflowIdParams } from './workflows.schema.js';

/** Workflow executions (dashboard API: secret key, or session + X-Project-Id). */
export async function executionsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Workflows'];

  r.post('/workflows/:id/executions', {
    schema: {
      tags,
      summary: 'Start the workflow for a contact (400 when disabled; 409 with an active execution, or any earlier one without re-entry)',
      params: WorkflowIdParams,
      body: StartExecutionBody,
      response: { 201: WorkflowExecution },
    },
    handler: async (request, reply) => reply.code(201).send(await startExecution(deps.db, projectIdOf(request), request.params.id, request.body)),
  });

  r.get('/workflows/:id/executions', {
    schema: { tags, summary: 'Page of executions, newest first, filterable by status', params: WorkflowIdParams, querystring: ListExecutionsQuery, response: { 200: WorkflowExecutionList } },
    handler: async (request) => listExecutions(deps.db, projectIdOf(request), request.params.id, request.query),
  });

  r.post('/workflows/:id/executions/cancel-all', {
    schema: { tags, summary: 'Cancel every RUNNING or WAITING execution of the workflow', params: WorkflowIdParams, response: { 200: CancelAllResult } },
    handler: async (request) => cancelAllExecutions(deps.db, projectIdOf(request), request.params.id),
  });

  r.get('/workflows/:id/executions/:executionId', {
    schema: { tags, summary: 'One execution with its step timeline', params: ExecutionParams, response: { 200: WorkflowExecutionDetail } },
    handler: async (request) => getExecution(deps.db, projectIdOf(request), request.params.id, request.params.executionId),
  });

  r.delete('/workflows/:id/executions/:executionId', {
    schema: { tags, summary: 'Cancel a RUNNING or WAITING execution (409 once finished); answers it', params: ExecutionParams, response: { 200: WorkflowExecution } },
    handler: async (request) => cancelExecution(deps.db, projectIdOf(request), request.params.id, request.params.executionId),
  });
}
