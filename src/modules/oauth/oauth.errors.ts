/**
 * Why an OAuth sign-in failed: the `error` query parameter of the redirect to the dashboard
 * (`/app/login?error=…`), or the envelope's `details.reason` for API clients (docs/accounts.md).
 */
export const OAUTH_ERRORS = {
  /** The user declined consent at the provider (`error=access_denied`). */
  oauth_denied: 400,
  /** The provider answered an error, refused the code (PKCE, client credentials) or could not be reached. */
  oauth_provider_error: 502,
  /** No state cookie: it expired (10 minutes), cookies are blocked, or the flow was not started here. */
  oauth_state_missing: 400,
  /** The `state` parameter is not the one this browser's flow started with. */
  oauth_state_mismatch: 400,
  /** The provider shared no usable email address. */
  oauth_no_email: 400,
  /** Sign-up: the provider has not verified the address (an account is only created for a proven address). */
  oauth_email_unverified: 403,
  /** An account with the provider's email exists and is not linked to this provider account. */
  oauth_account_exists: 409,
  /** SIGNUP_ENABLED=false and the provider account belongs to nobody. */
  oauth_signup_disabled: 403,
  /** Linking: this provider account already signs in to another user. */
  oauth_identity_taken: 409,
  /** Linking: the signed-in user already linked another account of this provider. */
  oauth_already_linked: 409,
  /** Linking: the session that started the link ended (or is another user's) before the callback. */
  oauth_session_ended: 401,
} as const;
export type OAuthErrorReason = keyof typeof OAUTH_ERRORS;

/** An expected failure of the OAuth flow; the callback turns it into a redirect or an envelope. */
export class OAuthFlowError extends Error {
  readonly reason: OAuthErrorReason;
  constructor(reason: OAuthErrorReason, message: string, opts: { cause?: unknown } = {}) {
    super(message, opts);
    this.name = 'OAuthFlowError';
    this.reason = reason;
  }

  get statusCode(): number {
    return OAUTH_ERRORS[this.reason];
  }
}
