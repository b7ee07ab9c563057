import { describeFuzzGroup } from './group.js';

// Property-based requests over the accounts operations of the OpenAPI document (test/README.md "Fuzzing").
describeFuzzGroup('accounts');
