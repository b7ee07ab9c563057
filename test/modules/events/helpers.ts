import type { FastifyInstance } from 'fastify';
import { bearer, type TestProject } from '../../helpers/accounts.js';

/** POST /v1/track with the project's public key. */
export const track = (app: FastifyInstance, project: TestProject, payload: object, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/v1/track', headers: { ...bearer(project.public), ...headers }, payload });

/** A GET with the project's secret key. */
export const get = (app: FastifyInstance, project: TestProject, url: string) =>
  app.inject({ method: 'GET', url, headers: bearer(project.secret) });
