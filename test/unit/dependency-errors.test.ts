import { strict as assert } from 'node:assert';
import { NamespaceNotFoundError, ServiceError as TemporalServiceError } from '@temporalio/client';
import { isDependencyUnavailable, toServiceError } from '../../api/errors';

/** A gRPC error as @grpc/grpc-js makes one (what the Temporal client wraps). */
const grpcError = (code: number, details: string) =>
  Object.assign(new Error(`${code} ${details}`), { code, details, metadata: { getMap: () => ({}) } });

describe('errors: a dependency that does not answer is 503, not 500', () => {
  it('Postgres unreachable, shutting down, starting up, or the connection cut mid-query', () => {
    const cases = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
      // knex puts the query before the driver's message, which has no code.
      new Error('insert into "transactions" ... - Connection terminated unexpectedly'),
      Object.assign(new Error('Timeout acquiring a connection. The pool is probably full.'), {
        name: 'KnexTimeoutError',
      }),
    ];
    for (const error of cases) {
      assert.ok(isDependencyUnavailable(error), error.message);
      const answer = toServiceError(error);
      assert.equal(answer.code, 'SERVICE_UNAVAILABLE');
      assert.match(answer.headers['Retry-After'] ?? '', /^\d+$/);
    }
  });

  it('Temporal unavailable or past its deadline, through the client error that wraps it', () => {
    for (const code of [14, 4])
      assert.ok(
        isDependencyUnavailable(
          new TemporalServiceError('Failed to start Workflow', { cause: grpcError(code, 'No connection established') }),
        ),
      );
  });

  it("Temporal's server not finding the service's namespace while its database recovers", () => {
    const answer = toServiceError(new NamespaceNotFoundError('default'));
    assert.equal(answer.code, 'SERVICE_UNAVAILABLE');
    assert.match(answer.headers['Retry-After'] ?? '', /^\d+$/);
  });

  it('a failed query or a refused call is not an outage: still a 500', () => {
    const cases = [
      Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }),
      // A query's error repeats the value it was given, which may read like an outage.
      Object.assign(new Error('select $1::uuid - invalid input syntax for type uuid: "x - Connection terminated"'), {
        code: '22P02',
      }),
      new Error('Connection settings are invalid'),
      // NOT_FOUND without the namespace failure's details (a workflow, say): not an outage.
      new TemporalServiceError('Failed to start Workflow', { cause: grpcError(5, 'not found') }),
    ];
    for (const error of cases) {
      assert.equal(isDependencyUnavailable(error), false, error.message);
      assert.equal(toServiceError(error).code, 'INTERNAL_SERVER_ERROR');
    }
  });
});
