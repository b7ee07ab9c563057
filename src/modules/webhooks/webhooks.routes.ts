import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { applyFeedback } from '../bounces/index.js';
import { createProviderHandler, detectProvider, jsonOf, type ProviderOptions } from './providers/index.js';
import { parseSesEvent } from './ses.js';
import {
  type CertificateFetcher,
  confirmSubscription,
  createSnsVerifier,
  isSnsUrl,
  SnsMessage,
  type SnsVerifier,
  type SubscriptionConfirmer,
} from './sns.js';

/** Options of the SNS endpoint; every one has a production default. */
export interface SnsOptions {
  /**
   * Require a valid SNS signature. Default: SNS_VERIFY (true). Off, anyone who can reach the
   * endpoint can post bounces.
   */
  verify?: boolean;
  /** Accept only these TopicArns. Default: SNS_TOPIC_ARNS, or any topic when it is unset. */
  topicArns?: readonly string[];
  /** Fetches signing certificates. Default: HTTPS GET (tests inject a local certificate). */
  fetchCertificate?: CertificateFetcher;
  /** Visits the SubscribeURL of a verified SubscriptionConfirmation. Default: HTTPS GET. */
  confirmSubscription?: SubscriptionConfirmer;
  /** Replaces the whole verifier (fetchCertificate is then unused). */
  verifier?: SnsVerifier;
}

/** SNS sends JSON as text/plain; application/json is taken too. */
function parseBody(body: unknown): SnsMessage {
  let json: unknown = body;
  if (typeof body === 'string') {
    try {
      json = JSON.parse(body);
    } catch {
      throw new ApiError(400, ErrorCode.BAD_REQUEST, 'Body is not an SNS message (JSON expected)');
    }
  }
  const parsed = SnsMessage.safeParse(json);
  if (!parsed.success) throw new ApiError(400, ErrorCode.BAD_REQUEST, 'Body is not an SNS message (Type, MessageId, TopicArn, Message, Timestamp expected)');
  return parsed.data;
}

/**
 * POST /webhooks/notifications: the relay's delivery notifications, SES through SNS
 * (SPEC Inbound notification endpoints; docs/tracking.md). Answers 200 once the
 * notification is applied (or knowingly ignored), 403 to a bad signature, 503 when the
 * signing certificate cannot be fetched (SNS retries).
 */
export async function webhooksRoutes(app: FastifyInstance, deps: AppDeps & { sns?: SnsOptions; providers?: Partial<ProviderOptions> }): Promise<void> {
  const opts = deps.sns ?? {};
  const verify = opts.verify ?? deps.config.snsVerify;
  const topicArns = opts.topicArns ?? (deps.config.snsTopicArns.length > 0 ? deps.config.snsTopicArns : undefined);
  const verifier = opts.verifier ?? createSnsVerifier({ fetchCertificate: opts.fetchCertificate });
  const confirm = opts.confirmSubscription ?? confirmSubscription;
  if (!verify) app.log.warn('SNS signature verification is off: /webhooks/notifications trusts every caller');
  const handleProvider = createProviderHandler(deps.db, {
    secrets: deps.config.providerWebhooks,
    autoDisable: deps.config.autoDisableProjects,
    ...deps.providers,
  });

  // Signatures cover the exact bytes: this plugin's routes read their bodies raw (others keep Fastify's parsers).
  const raw = (_req: unknown, body: Buffer, done: (err: Error | null, body?: Buffer) => void) => done(null, body);
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, raw);
  app.addContentTypeParser('text/plain', { parseAs: 'buffer' }, raw);

  app.post('/webhooks/notifications', {
    config: { auth: 'none', rateLimit: false },
    schema: {
      tags: ['Webhooks'],
      summary: 'Delivery notifications of the mail relay: Amazon SES through SNS, Postmark, Mailgun, SendGrid, Resend (docs/bounces.md)',
    },
    handler: async (request) => {
      const bytes = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const text = bytes.toString('utf8');
      const json = jsonOf(text);
      const provider = detectProvider(request, json);
      if (provider !== 'ses') return handleProvider(provider, request, bytes, json);
      const msg = parseBody(text);
      const log = request.log.child({ snsMessageId: msg.MessageId, snsType: msg.Type, topicArn: msg.TopicArn });
      if (verify) {
        const verdict = await verifier(msg);
        if (!verdict.ok) {
          log.warn({ reason: verdict.reason }, 'SNS message refused');
          if (verdict.retryable) throw new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, 'Cannot verify the SNS signature now; retry later');
          throw new ApiError(403, ErrorCode.FORBIDDEN, 'Invalid SNS signature');
        }
      }
      if (topicArns && !topicArns.includes(msg.TopicArn)) {
        log.warn('SNS message of a topic that is not allowed');
        throw new ApiError(403, ErrorCode.FORBIDDEN, 'Topic not allowed');
      }

      if (msg.Type === 'SubscriptionConfirmation') {
        const url = msg.SubscribeURL ?? '';
        // Only a verified message on an SNS host is confirmed automatically; otherwise an operator can visit the logged URL.
        const auto = verify && isSnsUrl(url);
        log.info({ subscribeUrl: url, autoConfirm: auto }, 'SNS subscription confirmation received');
        if (auto) {
          confirm(url).then(
            () => log.info('SNS subscription confirmed'),
            (err: unknown) => log.warn({ err, subscribeUrl: url }, 'SNS subscription not confirmed; visit the SubscribeURL to confirm'),
          );
        }
        return { received: true };
      }
      if (msg.Type !== 'Notification') {
        log.info('SNS message ignored');
        return { received: true };
      }

      const event = parseSesEvent(msg.Message);
      if ('ignored' in event) {
        log.info({ reason: event.ignored }, 'SNS notification ignored');
        return { received: true };
      }
      const outcome = await applyFeedback(deps.db, { messageIds: event.messageIds }, event, log, { autoDisable: deps.config.autoDisableProjects });
      log.info({ kind: event.kind, outcome, messageIds: event.messageIds }, 'delivery notification applied');
      return { received: true };
    },
  });
}
