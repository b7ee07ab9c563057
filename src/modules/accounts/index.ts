/** The accounts module's facade: what the app and the operator CLI import. */
export { findUserByEmail, insertUser } from './accounts.repo.js';
export { insertUserWithoutPassword } from './external-users.repo.js';
export { SignupBody } from './accounts.schema.js';
export { hashPassword, resetPassword } from './accounts.service.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { accountsRoutes } from './accounts.routes.js';
