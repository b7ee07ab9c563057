/** The accounts module's facade: what the app and the operator CLI import. */
// Sending needs a verified owner (every send path calls it before queuing).
export { assertProjectCanSend } from './sending-gate.js';
export { findUserByEmail, insertUser } from './accounts.repo.js';
export { insertUserWithoutPassword } from './external-users.repo.js';
export { SignupBody } from './accounts.schema.js';
export { hashPassword, resetPassword } from './accounts.service.js';
export { sendPasswordReset } from './email-flows.service.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { accountsRoutes } from './accounts.routes.js';
