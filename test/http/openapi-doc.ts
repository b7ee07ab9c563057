/** The parts of the served OpenAPI document the tests read. */
export interface Schema {
  $ref?: string;
  anyOf?: Schema[];
  type?: string | string[];
  format?: string;
  required?: string[];
  properties?: Record<string, Schema>;
  minLength?: number;
  description?: string;
  [key: string]: unknown;
}

interface Media {
  schema?: Schema;
  example?: unknown;
}

export interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; schema?: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, Media | undefined> };
  responses: Record<string, { description: string; content?: Record<string, Media | undefined> }>;
}

export interface SecurityScheme {
  type: string;
  scheme?: string;
  in?: string;
  name?: string;
}

export interface Doc {
  openapi: string;
  paths: Record<string, Record<string, Operation | undefined> | undefined>;
  components: { schemas: Record<string, Schema | undefined>; securitySchemes: Record<string, SecurityScheme> };
}

export const ref = (id: string) => `#/components/schemas/${id}`;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Every operation of the document with its method (lower case) and path. */
export function operations(doc: Doc): { method: string; path: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const op = item?.[method];
      return op ? [{ method, path, op }] : [];
    }),
  );
}
