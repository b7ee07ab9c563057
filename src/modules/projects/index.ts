/** The projects module's facade: what the app and the operator CLI import. */
export { findProjectById, insertProject } from './projects.repo.js';
export { CreateProjectBody } from './projects.schema.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { projectsRoutes } from './projects.routes.js';
