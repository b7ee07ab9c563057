import { describeFuzzGroup } from './group.js';

// Property-based requests over the messaging operations of the OpenAPI document (test/README.md "Fuzzing").
describeFuzzGroup('messaging');
