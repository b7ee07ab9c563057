// `npm run admin -- <command>`: the operator CLI compiled to JavaScript (dist/cli/admin.js), built
// again first when src/ changed since, as `npm start` does (scripts/build-server.mjs `builtEntry`).
import { builtEntry } from './build-server.mjs';

await import(builtEntry('cli/admin.js'));
