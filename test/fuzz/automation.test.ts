import { describeFuzzGroup } from './group.js';

// Property-based requests over the automation operations of the OpenAPI document (test/README.md "Fuzzing").
describeFuzzGroup('automation');
