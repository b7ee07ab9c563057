// `npm start`: runs the server compiled to JavaScript (dist/server.js), in this process, after
// building dist/ again when src/ changed since (scripts/build-server.mjs `builtEntry`).
import { builtEntry } from './build-server.mjs';

// Stack traces name dist/*.js lines (one file per src/*.ts file, not minified). NODE_OPTIONS=
// --enable-source-maps maps them to src/*.ts through dist/'s linked maps: 5–8 MB more at idle,
// held for every loaded module (docs/performance.md "Memory").
await import(builtEntry('server.js'));
