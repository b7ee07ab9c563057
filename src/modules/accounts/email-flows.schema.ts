import { z } from 'zod';
import { SignupBody } from './accounts.schema.js';

/** A token as emailed (43 base64url characters); anything else is simply not a valid token. */
const Token = z.string().min(1).max(200).describe('The token of the emailed link (`?token=` of PUBLIC_URL/app/…)');

export const RequestVerificationBody = z.object({}).meta({ description: 'Empty: the signed-in user (cookie) is sent a new link' });
export const VerifyEmailBody = z.object({ token: Token });
export const RequestPasswordResetBody = z.object({ email: z.string().min(1).max(254).describe('The account\'s address') });
export const ResetPasswordBody = z.object({ token: Token, password: SignupBody.shape.password });

export const Success = z.object({ success: z.literal(true) });
