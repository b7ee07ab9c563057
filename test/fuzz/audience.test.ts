import { describeFuzzGroup } from './group.js';

// Property-based requests over the audience operations of the OpenAPI document (test/README.md "Fuzzing").
describeFuzzGroup('audience');
