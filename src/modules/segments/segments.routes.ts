import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../app-deps.js';

export async function segmentsRoutes(_app: FastifyInstance, _deps: AppDeps): Promise<void> {}
