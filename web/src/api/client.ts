import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

/** One field's problem in a 422 answer (`error.errors[]`). */
export interface FieldError {
  field: string;
  message: string;
  code?: string;
}

/** A non-2xx answer in the spec's envelope (`{success: false, error: {code, message, requestId, errors?}}`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
    readonly fields: FieldError[] = [],
    readonly suggestion: string | undefined = undefined,
  ) {
    super(message);
  }

  /** The message of one field's error, for the form field it belongs to. */
  fieldMessage(field: string): string | undefined {
    return this.fields.find((f) => f.field === field)?.message;
  }
}

interface Envelope {
  message?: string;
  error?: { code?: string; message?: string; requestId?: string; errors?: FieldError[]; suggestion?: string };
}

/** The ApiError of a failed answer's body (the envelope, the legacy `{error: string}`, or a bare status). */
export function toApiError(status: number, body: unknown): ApiError {
  const raw = (body && typeof body === 'object' ? (body as { error?: unknown }) : {}).error;
  // The spec's legacy 400 bodies are `{"error": "<message>"}`.
  if (typeof raw === 'string') return new ApiError(status, 'BAD_REQUEST', raw, undefined);
  const e = raw as Envelope['error'];
  const message = e?.message ?? (body as Envelope | undefined)?.message ?? `The server answered ${status}`;
  return new ApiError(status, e?.code ?? 'HTTP_ERROR', message, e?.requestId, e?.errors ?? [], e?.suggestion);
}

let projectId: string | undefined;
let onSignedOut: (() => void) | undefined;

/** The project the dashboard's project routes act on (sent as X-Project-Id with the session cookie). */
export function setCurrentProject(id: string | undefined): void {
  projectId = id;
}

/** Called when an answer says the session has ended (401): the app returns to sign-in. */
export function setSignedOutHandler(handler: () => void): void {
  onSignedOut = handler;
}

const session: Middleware = {
  onRequest({ request }) {
    if (projectId && !request.headers.has('x-project-id')) request.headers.set('x-project-id', projectId);
    return request;
  },
  onResponse({ response, request }) {
    if (response.status === 401 && !new URL(request.url).pathname.startsWith('/auth/')) onSignedOut?.();
    return response;
  },
};

/** The typed client of the server's API: paths, parameters and bodies from its OpenAPI document. */
export const api = createClient<paths>({ baseUrl: globalThis.location?.origin ?? '', credentials: 'same-origin' });
api.use(session);

/** The data of an openapi-fetch answer, or its ApiError thrown. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw toApiError(response.status, error);
  return data as T;
}
