import type { AuthMode } from './context.js';

/** A registered route as the index needs it (app.ts' `routeCatalog` entries). */
export interface IndexedRoute {
  method: string;
  url: string;
  auth: AuthMode;
}

/** The methods registered at one concrete path. */
export interface MethodsAt {
  /** Every method with a route matching the path (HEAD included where GET is). */
  methods: ReadonlySet<string>;
  /** Methods whose route there is declared `auth: 'public'` (callable from any web page). */
  publicMethods: ReadonlySet<string>;
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `/contacts/:id` → /^\/contacts\/[^/]+$/; `/t/o/*` → /^\/t\/o\/.*$/ (the router's own syntax). */
function patternOf(url: string): RegExp {
  const trimmed = url.length > 1 ? url.replace(/\/+$/, '') : url;
  const source = trimmed
    .split('/')
    .map((segment) => (segment === '*' ? '.*' : segment.split(/(:[A-Za-z0-9_]+)/).map((p) => (p.startsWith(':') ? '[^/]+' : escapeRegex(p))).join('')))
    .join('/');
  return new RegExp(`^${source}$`);
}

/**
 * Which methods exist at a path, computed from the registered routes: what a 405's `Allow`
 * lists and what a CORS preflight may grant. The router matches per method, so a method is
 * available at a path exactly when one of its patterns matches it: the union is the answer.
 */
export function buildRouteIndex(routes: readonly IndexedRoute[]): (path: string) => MethodsAt {
  const compiled = routes.map((r) => ({ ...r, pattern: patternOf(r.url) }));
  return (rawPath) => {
    const path = rawPath.length > 1 ? rawPath.replace(/\/+$/, '') : rawPath;
    const methods = new Set<string>();
    const publicMethods = new Set<string>();
    for (const route of compiled) {
      if (!route.pattern.test(path)) continue;
      methods.add(route.method);
      if (route.method === 'GET') methods.add('HEAD');
      if (route.auth === 'public') publicMethods.add(route.method);
    }
    return { methods, publicMethods };
  };
}
