import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { RequestPasswordResetBody, RequestVerificationBody, ResetPasswordBody, Success, VerifyEmailBody } from './email-flows.schema.js';
import { requestPasswordReset, requestVerification, resetPasswordWithToken, verifyEmail } from './email-flows.service.js';

/** POST /auth/request-verification, /auth/verify-email, /auth/request-password-reset, /auth/reset-password (docs/accounts.md). */
export async function emailFlowsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Accounts'];
  const success = { success: true as const };

  r.post('/auth/request-verification', {
    config: { auth: 'user', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Email the signed-in user a new verification link',
      description:
        'The link (PUBLIC_URL/app/verify-email?token=…) works once, for 24 hours. At most 3 an hour per account (the 4th: 429). ' +
        'An address already verified is sent nothing.',
      body: RequestVerificationBody.optional(),
      response: { 200: Success },
    },
    handler: async (request) => {
      if (!request.user) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Sign in first');
      await requestVerification(deps.db, request.user.id, deps.config.publicUrl);
      return success;
    },
  });

  r.post('/auth/verify-email', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Verify an email address with the emailed token',
      description: 'A token works once; an unknown, used or expired one is 400 INVALID_TOKEN.',
      body: VerifyEmailBody,
      response: { 200: Success },
    },
    handler: async (request) => {
      await verifyEmail(deps.db, request.body.token);
      return success;
    },
  });

  r.post('/auth/request-password-reset', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Email a password reset link',
      description:
        'Always 200 {success: true}, at once, whether or not the address has an account (the lookup and the email happen in a job). ' +
        'The link (PUBLIC_URL/app/reset-password?token=…) works once, for 1 hour; at most 3 are sent per account per hour, further requests send nothing.',
      body: RequestPasswordResetBody,
      response: { 200: Success },
    },
    handler: async (request) => {
      await requestPasswordReset(deps.db, request.body.email);
      return success;
    },
  });

  r.post('/auth/reset-password', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Choose a new password with the emailed token',
      description:
        'Sets the password (the sign-up rules), ends every session of the account, marks its address verified. ' +
        'A token works once; an unknown, used or expired one is 400 INVALID_TOKEN. Sign in with the new password afterwards.',
      body: ResetPasswordBody,
      response: { 200: Success },
    },
    handler: async (request) => {
      await resetPasswordWithToken(deps.db, request.body.token, request.body.password);
      return success;
    },
  });
}
