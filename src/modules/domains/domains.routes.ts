import { projectIdOf } from '../../http/auth.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { dkimSecretBox } from './dkim-keys.js';
import { CreateDomainBody, Domain, DomainIdParams, ProjectIdParams, UpdateDomainBody } from './domains.schema.js';
import { addDomain, type DomainLog, listProjectDomains, removeDomain, updateDomain, verifyDomainNow } from './domains.service.js';

const requestLog =
  (request: FastifyRequest): DomainLog =>
  (message, meta) =>
    request.log.info(meta, message);

export async function domainsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Domains'];
  const box = dkimSecretBox(deps.config.secret);

  r.get('/domains/project/:projectId', {
    schema: {
      tags,
      summary: "The project's sender domains, verified and pending, newest first",
      params: ProjectIdParams,
      response: { 200: z.array(Domain) },
    },
    handler: async (request) => listProjectDomains(deps.db, projectIdOf(request), request.params.projectId),
  });

  r.post('/domains', {
    schema: {
      tags,
      summary: 'Add a sender domain: generates its DKIM key and returns the DNS records to publish',
      description:
        'Publish the DKIM record exactly, then call GET /domains/:id/verify (domains are also re-checked every 5 minutes). ' +
        'SPF and DMARC are recommended and reported, not required. 409 when the project already has the domain or another project has it verified.',
      body: CreateDomainBody,
      response: { 201: Domain },
    },
    handler: async (request, reply) => reply.code(201).send(await addDomain(deps.db, box, projectIdOf(request), request.body.domain)),
  });

  r.get('/domains/:id/verify', {
    schema: {
      tags,
      summary: 'Check the DNS records now and return the domain with the status of each record',
      description:
        'Verified when the DKIM record is published exactly. A lookup error (timeout, SERVFAIL) leaves the state unchanged. ' +
        '409 when another project has the domain verified.',
      params: DomainIdParams,
      response: { 200: Domain },
    },
    handler: async (request) =>
      verifyDomainNow(deps, { projectId: projectIdOf(request), id: request.params.id, log: requestLog(request) }),
  });

  r.patch('/domains/:id', {
    schema: {
      tags,
      summary: 'Change a sender domain: turn inbound mail on or off',
      description:
        'inboundEnabled: mail to any address of this domain or its subdomains, delivered to the inbound SMTP receiver (MX record), ' +
        'becomes an email.received event on the sending contact, while the domain is verified (docs/bounces.md "Inbound mail").',
      params: DomainIdParams,
      body: UpdateDomainBody,
      response: { 200: Domain },
    },
    handler: async (request) => updateDomain(deps.db, projectIdOf(request), request.params.id, request.body),
  });

  r.delete('/domains/:id', {
    schema: { tags, summary: 'Remove a sender domain and its DKIM key', params: DomainIdParams },
    handler: async (request, reply) => {
      await removeDomain(deps.db, projectIdOf(request), request.params.id);
      return reply.code(204).send();
    },
  });
}
