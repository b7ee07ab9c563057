import type { Kysely } from 'kysely';
import type { Database, OAuthProviderName } from '../../db/schema.js';
import { ApiError, ErrorCode, notFound } from '../../http/errors.js';
import type { SessionClaims } from '../../http/session.js';
import { findUserByEmail, insertUserWithoutPassword } from '../accounts/index.js';
import { OAuthFlowError } from './oauth.errors.js';
import type { ProviderProfile } from './oauth.providers.js';
import { deleteIdentity, type IdentityUser, insertIdentity, isSessionLive, lockProviderAccount, touchIdentity } from './oauth.repo.js';

/**
 * The account a provider account signs in to (docs/accounts.md "Sign-in with GitHub or Google"):
 * - linked already: that user, whatever the provider's email is now;
 * - its email belongs to an account it is not linked to: refused (`oauth_account_exists`):
 *   the owner signs in as before and links the provider from there, so a provider account
 *   never takes over an existing account;
 * - nobody's: a new account without a password, its email verified, when the provider verified
 *   the address (else `oauth_email_unverified`: an unproven address would let its real owner
 *   reset the password later while the provider account kept signing in) and sign-up is enabled.
 */
export async function signInWithProvider(
  db: Kysely<Database>,
  input: { provider: OAuthProviderName; label: string; profile: ProviderProfile; signupEnabled: boolean },
): Promise<IdentityUser> {
  const { provider, label, profile } = input;
  const key = { provider, providerUserId: profile.providerUserId };
  return db.transaction().execute(async (trx) => {
    await lockProviderAccount(trx, key);
    const linked = await touchIdentity(trx, key, profile.email);
    if (linked) return linked;

    const taken = () =>
      new OAuthFlowError(
        'oauth_account_exists',
        `An account with ${profile.email} already exists. Sign in the way you did before (email and password, or the ` +
          `provider you used), then link ${label} from your account settings.`,
      );
    // Unverified first: only an address's proven owner learns whether it has an account.
    if (!profile.emailVerified) {
      throw new OAuthFlowError(
        'oauth_email_unverified',
        `${label} has not verified ${profile.email}: verify it there first, or sign up with email and password`,
      );
    }
    if (await findUserByEmail(trx, profile.email)) throw taken();
    if (!input.signupEnabled) {
      throw new OAuthFlowError('oauth_signup_disabled', `Sign-up is disabled on this instance, and this ${label} account is not linked to an account`);
    }
    const user = await insertUserWithoutPassword(trx, { email: profile.email, emailVerified: true });
    // A password sign-up of the same address won the race since the lookup above.
    if (!user) throw taken();
    await insertIdentity(trx, { ...key, userId: user.id, email: profile.email });
    return { userId: user.id, email: user.email, emailVerified: user.email_verified_at !== null };
  });
}

/**
 * Links a provider account to the signed-in user who started the flow. Refused when the
 * session ended meanwhile, when the provider account signs in to someone else, or when the
 * user already linked another account of this provider. Linking again the same account is a no-op.
 */
export async function linkProvider(
  db: Kysely<Database>,
  input: { provider: OAuthProviderName; label: string; profile: ProviderProfile; linkUserId: string; session: SessionClaims | undefined },
): Promise<void> {
  const { provider, label, profile, session } = input;
  if (!session || session.userId !== input.linkUserId || !(await isSessionLive(db, session))) {
    throw new OAuthFlowError('oauth_session_ended', `Your session ended before ${label} answered: sign in and link ${label} again`);
  }
  const key = { provider, providerUserId: profile.providerUserId };
  await db.transaction().execute(async (trx) => {
    await lockProviderAccount(trx, key);
    const owner = (await touchIdentity(trx, key, profile.email))?.userId;
    if (owner === input.linkUserId) return;
    if (owner) throw new OAuthFlowError('oauth_identity_taken', `This ${label} account is already linked to another account`);
    const outcome = await insertIdentity(trx, { ...key, userId: input.linkUserId, email: profile.email });
    if (outcome === 'user_has_provider') {
      throw new OAuthFlowError('oauth_already_linked', `Your account is already linked to another ${label} account`);
    }
  });
}

/**
 * Unlinks a provider from the signed-in user: 404 when it is not linked, 409 when it is the
 * account's last way to sign in (no password, no other provider).
 */
export async function unlinkProvider(db: Kysely<Database>, input: { userId: string; provider: OAuthProviderName; label: string }): Promise<void> {
  const outcome = await db.transaction().execute((trx) => deleteIdentity(trx, input.userId, input.provider));
  if (outcome === 'not_linked') throw notFound(`A linked ${input.label} account`);
  if (outcome === 'last_sign_in_method') {
    throw new ApiError(409, ErrorCode.CONFLICT, `${input.label} is the only way to sign in to this account: set a password or link another provider first`, {
      suggestion: 'Request a password reset for your address (POST /auth/request-password-reset), then unlink',
    });
  }
}
