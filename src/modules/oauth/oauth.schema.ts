import { z } from 'zod';

export const ProviderParams = z.object({ provider: z.string().max(32).describe('github or google') });

export const CallbackQuery = z.object({
  code: z.string().max(2048).optional().describe('The authorization code (on success)'),
  state: z.string().max(512).optional().describe('The state the flow started with'),
  error: z.string().max(256).optional().describe('The provider\'s error, e.g. access_denied when consent was declined'),
  error_description: z.string().max(2048).optional(),
});
export type CallbackQuery = z.infer<typeof CallbackQuery>;

export const OAuthConfig = z
  .object({
    providers: z
      .array(
        z.object({
          id: z.enum(['github', 'google']),
          name: z.string().describe('For the sign-in button'),
          url: z.string().describe('Where the button leads: the start of the sign-in (a browser navigation, not a fetch)'),
        }),
      )
      .describe('The configured providers (client id and secret both set); empty when none'),
  })
  .meta({ examples: [{ providers: [{ id: 'github', name: 'GitHub', url: '/auth/oauth/github' }] }] });

export const Redirect = z.null().describe('A redirect (Location header)');

export const LinkedIdentity = z
  .object({
    provider: z.enum(['github', 'google']),
    email: z.string().describe("The provider account's primary email at its last sign-in"),
    linkedAt: z.iso.datetime(),
    lastSignInAt: z.iso.datetime(),
  })
  .meta({ id: 'LinkedIdentity' });

export const IdentityParams = z.object({ provider: z.string().max(32).describe('github or google') });
