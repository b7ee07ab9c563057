/** The members module's facade: what the app and other modules (accounts, oauth) import. */
export { acceptPendingInvitations } from './invitations.service.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { membersRoutes } from './members.routes.js';
