/**
 * The contacts module's facade: what other modules, jobs, the HTTP layer and the app import.
 * Order matters: leaf modules (schemas, rules, repos) first, then services and routes, which
 * import other modules' facades that may import this one back (a cycle then finds everything
 * above already evaluated).
 */
export { Contact } from './contacts.schema.js';
export { findContactsByEmails, rowToContact } from './contacts.repo.js';
// The shared data rules and set-based upsert (/v1/send, /v1/track, static segment members).
export {
  type DataInput,
  type DataLimitBreach,
  dataLimitError,
  dataLimitIssues,
  normalizeEmail,
  RESERVED_DATA_KEYS,
  RequestDataInput,
  resolveData,
} from './data-rules.js';
// Workflow UPDATE_CONTACT steps validate their stored updates as POST /contacts does.
export { ContactDataInput } from './data-rules.js';
export { acceptContactData } from './data-accept.js';
export { type AttachedWrite, type ContactUpsert, isRefused, upsertContacts, upsertContactsChecked, upsertContactsOnce, type UpsertedContact } from './contacts.upsert.js';
export { failJob } from './jobs.repo.js';
export { MAX_IMPORT_BYTES } from './import.upload.js';

// Services: the jobs' work, field listings.
export { runBulkJob } from './bulk.service.js';
export { runImportJob } from './import.service.js';
export { listFields, runFieldDeleteJob } from './fields.service.js';

// Routes.
export { contactsRoutes } from './contacts.routes.js';
export { fieldsRoutes } from './fields.routes.js';
export { contactJobsRoutes } from './bulk.routes.js';
export { contactExportRoutes } from './export.routes.js';
