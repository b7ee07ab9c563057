import { projectOf } from '../../http/auth.js';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { countAudience } from './audience.js';
import {
  AudienceCount,
  AudienceCountBody,
  Campaign,
  CAMPAIGN_BODY_LIMIT,
  CampaignIdParams,
  CampaignList,
  CampaignBounceList,
  CampaignBouncesQuery,
  CampaignLinks,
  CampaignLinksQuery,
  CampaignStats,
  CampaignTimeseries,
  CampaignTimeseriesQuery,
  CreateCampaignBody,
  ListCampaignsQuery,
  SendCampaignAnswer,
  SendCampaignBody,
  TestSendAnswer,
  TestSendBody,
  UpdateCampaignBody,
  WrappedCampaign,
} from './campaigns.schema.js';
import { campaignStats, createCampaign, duplicateCampaign, getCampaign, listCampaigns, putCampaign, removeCampaign } from './campaigns.service.js';
import { campaignBounces, campaignLinks, campaignTimeseries } from './insight.service.js';
import { cancelCampaign, sendCampaign, testSendCampaign } from './lifecycle.js';

export async function campaignsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Campaigns'];
  const { db } = deps;

  r.get('/campaigns', {
    schema: { tags, summary: 'Page list of campaigns, newest first by default', querystring: ListCampaignsQuery, response: { 200: CampaignList } },
    handler: async (request) => listCampaigns(db, projectOf(request).id, request.query),
  });

  r.post('/campaigns', {
    bodyLimit: CAMPAIGN_BODY_LIMIT,
    schema: {
      tags,
      summary: 'Create a DRAFT campaign; answered wrapped as {success, data}',
      body: CreateCampaignBody,
      response: { 201: WrappedCampaign },
    },
    handler: async (request, reply) =>
      reply.code(201).send({ success: true as const, data: await createCampaign(db, projectOf(request).id, request.body) }),
  });

  r.post('/campaigns/audience-count', {
    schema: {
      tags,
      summary: "Recipients an audience would have if a campaign were sent to it now (the composer's live count); saves nothing",
      body: AudienceCountBody,
      response: { 200: AudienceCount },
    },
    handler: async (request) => {
      const { type = 'MARKETING', audienceType, segmentId, audienceCondition } = request.body;
      return { count: await countAudience(db, projectOf(request).id, { type, audienceType, segmentId, audienceCondition }) };
    },
  });

  r.get('/campaigns/:id', {
    schema: { tags, summary: 'One campaign', params: CampaignIdParams, response: { 200: Campaign } },
    handler: async (request) => getCampaign(db, projectOf(request).id, request.params.id),
  });

  r.put('/campaigns/:id', {
    bodyLimit: CAMPAIGN_BODY_LIMIT,
    schema: {
      tags,
      summary: 'Replace the given fields (only DRAFT or SCHEDULED; 409 otherwise)',
      params: CampaignIdParams,
      body: UpdateCampaignBody,
      response: { 200: Campaign },
    },
    handler: async (request) => putCampaign(db, projectOf(request).id, request.params.id, request.body),
  });

  r.delete('/campaigns/:id', {
    schema: { tags, summary: 'Delete a campaign; 409 while SCHEDULED or SENDING', params: CampaignIdParams },
    handler: async (request, reply) => {
      await removeCampaign(db, projectOf(request).id, request.params.id);
      return reply.code(204).send();
    },
  });

  r.post('/campaigns/:id/duplicate', {
    schema: {
      tags,
      summary: 'Copy as a new DRAFT "<name> (copy)"; answered wrapped like create',
      params: CampaignIdParams,
      response: { 201: WrappedCampaign },
    },
    handler: async (request, reply) =>
      reply.code(201).send({ success: true as const, data: await duplicateCampaign(db, projectOf(request).id, request.params.id) }),
  });

  r.post('/campaigns/:id/send', {
    schema: {
      tags,
      summary: 'Send now (DRAFT → SENDING) or schedule (DRAFT → SCHEDULED); only from DRAFT',
      params: CampaignIdParams,
      body: SendCampaignBody,
      response: { 200: SendCampaignAnswer },
    },
    handler: async (request) => sendCampaign(db, projectOf(request).id, request.params.id, request.body?.scheduledFor, deps.config.billing),
  });

  r.post('/campaigns/:id/cancel', {
    schema: {
      tags,
      summary: 'Cancel a SCHEDULED or SENDING campaign; its unsent emails are cancelled',
      params: CampaignIdParams,
      response: { 200: Campaign },
    },
    handler: async (request) => cancelCampaign(db, projectOf(request).id, request.params.id),
  });

  r.post('/campaigns/:id/test', {
    schema: {
      tags,
      summary: 'Send one test email of the campaign to an address (transactional priority)',
      params: CampaignIdParams,
      body: TestSendBody,
      response: { 200: TestSendAnswer },
    },
    handler: async (request) => {
      const p = projectOf(request);
      return testSendCampaign(
        { db, tokens: deps.tokens, publicUrl: deps.config.publicUrl, billing: deps.config.billing },
        { projectId: p.id, tracking: p.tracking, id: request.params.id, to: request.body.email },
      );
    },
  });

  r.get('/campaigns/:id/stats', {
    schema: { tags, summary: 'Counts and rates from the campaign\'s emails', params: CampaignIdParams, response: { 200: CampaignStats } },
    handler: async (request) => campaignStats(db, projectOf(request).id, request.params.id),
  });

  r.get('/campaigns/:id/stats/timeseries', {
    schema: {
      tags,
      summary: 'Deliveries, first opens by a person, first clicks, bounces and complaints per local hour or day (zero-filled)',
      description:
        'From the campaign\'s 15-minute rollup (each email counted once per milestone, machine opens excluded). Default range: the campaign\'s first send until now, at most 366 days; an explicit range longer than 366 days, an end before the start or an unknown time zone is 422.',
      params: CampaignIdParams,
      querystring: CampaignTimeseriesQuery,
      response: { 200: CampaignTimeseries },
    },
    handler: async (request) => campaignTimeseries(db, projectOf(request).id, request.params.id, request.query),
  });

  r.get('/campaigns/:id/links', {
    schema: {
      tags,
      summary: 'Most clicked links: every click and the emails that clicked, per URL',
      params: CampaignIdParams,
      querystring: CampaignLinksQuery,
      response: { 200: CampaignLinks },
    },
    handler: async (request) => campaignLinks(db, projectOf(request).id, request.params.id, request.query),
  });

  r.get('/campaigns/:id/bounces', {
    schema: {
      tags,
      summary: 'Bounced and complained emails of the campaign, newest first (cursor pages)',
      params: CampaignIdParams,
      querystring: CampaignBouncesQuery,
      response: { 200: CampaignBounceList },
    },
    handler: async (request) => campaignBounces(db, projectOf(request).id, request.params.id, request.query),
  });
}
