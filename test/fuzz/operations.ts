import type { Components, Schema } from './arbitraries.js';

/** One operation of the served OpenAPI document, as the fuzzer reads it. */
export interface Operation {
  method: string;
  path: string;
  /** `METHOD /path` (path in OpenAPI form). */
  id: string;
  /** Alternatives of the `security` requirement, each the scheme names to send together. */
  security: string[][];
  params: Parameter[];
  /** JSON body schema, when the operation takes one. */
  body?: Schema;
  bodyRequired: boolean;
  /** multipart/form-data body schema (uploads, imports). */
  multipart?: Schema;
  /** Documented answers: status → schema of the JSON body (if any). */
  responses: Record<string, Schema | undefined>;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: Schema;
}

export interface Doc {
  paths: Record<string, Record<string, OperationObject | undefined>>;
  components: { schemas: Components };
}

interface OperationObject {
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: Parameter['in']; required?: boolean; schema?: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema } | undefined> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema } | undefined> }>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export function operationsOf(doc: Doc): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const op = item[method];
      if (!op) return [];
      const content = op.requestBody?.content ?? {};
      const responses = Object.fromEntries(Object.entries(op.responses ?? {}).map(([status, r]) => [status, r.content?.['application/json']?.schema]));
      return [
        {
          method: method.toUpperCase(),
          path,
          id: `${method.toUpperCase()} ${path}`,
          security: (op.security ?? []).map((alternative) => Object.keys(alternative)),
          params: (op.parameters ?? []).map((p) => ({ name: p.name, in: p.in, required: p.required === true, schema: p.schema ?? {} })),
          body: content['application/json']?.schema,
          bodyRequired: op.requestBody?.required === true,
          multipart: content['multipart/form-data']?.schema,
          responses,
        },
      ];
    }),
  );
}

/**
 * The operation groups, one test file each (vitest runs files in parallel). Every operation of
 * the document belongs to exactly one: credentials.test.ts checks it.
 */
export const GROUPS = {
  accounts: (path: string) => /^\/(health|metrics|config|auth|users|projects|files|webhooks)(\/|$)/.test(path),
  audience: (path: string) => /^\/(v1\/track|events|contacts|segments|suppressions|activity|analytics)(\/|$)/.test(path),
  messaging: (path: string) => /^\/(templates|v1\/send|emails|v1\/verify|domains|inbound-messages|campaigns)(\/|$)/.test(path),
  automation: (path: string) => /^\/(workflows|webhook-endpoints|uploads)(\/|$)/.test(path),
} as const;

export type GroupName = keyof typeof GROUPS;
