import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/errors.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it('takes a refused or cut socket, a server shutting down or starting, and a connection lost under a query', () => {
    for (const err of [
      withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
      withCode('ECONNRESET'),
      withCode('57P01', 'terminating connection due to administrator command'),
      withCode('57P03', 'the database system is starting up'),
      withCode('08006', 'connection failure'),
      withCode('53300', 'sorry, too many clients already'),
      new Error('Connection terminated unexpectedly'),
      new Error('Client has encountered a connection error and is not queryable'),
      new Error('wrapped', { cause: withCode('ECONNREFUSED') }),
    ]) {
      expect(isDatabaseUnavailable(err), String(err)).toBe(true);
    }
  });

  it('leaves every other failure alone (500, or its own answer)', () => {
    for (const err of [
      withCode('23505', 'duplicate key value violates unique constraint'),
      withCode('57014', 'canceling statement due to statement timeout'),
      withCode('40001', 'could not serialize access'),
      new Error('Cannot read properties of undefined'),
      'ECONNREFUSED',
      null,
    ]) {
      expect(isDatabaseUnavailable(err), String(err)).toBe(false);
    }
  });
});
