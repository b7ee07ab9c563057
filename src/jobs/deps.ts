import type { AppDeps } from '../app-deps.js';

/** What tasks receive: the app's services without the HTTP session signer. */
export type JobDeps = Pick<AppDeps, 'config' | 'db' | 'dns' | 'tokens' | 'mail'>;
