import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorCode, ServiceError } from '../domain/errors';
import { DEPENDENCY_RETRY_AFTER } from './errors';

/** The server's rejection of an Update that the workflow task carrying it completed without answering. */
const UNPROCESSED = 'UnprocessedUpdate';
const TRIES = 4;

/**
 * Sends an Update (`send` runs executeUpdate or executeUpdateWithStart), again while the server
 * answers that no worker processed it: the workflow task that carried it completed without a
 * word about it (the run continued as new meanwhile, or a worker died holding it, as the handlers
 * chaos suite showed). Such an Update was never accepted, so sending it again (with the same id)
 * is safe and lands on the run that is there now. Still unprocessed after a few tries: 503.
 */
export async function sendUpdate<T>(send: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send();
    } catch (error) {
      const unprocessed =
        error instanceof WorkflowUpdateFailedError &&
        error.cause instanceof ApplicationFailure &&
        error.cause.type === UNPROCESSED;
      if (!unprocessed) throw error;
      if (attempt === TRIES)
        throw new ServiceError(
          ErrorCode.SERVICE_UNAVAILABLE,
          `The request could not be processed now: try again in ${DEPENDENCY_RETRY_AFTER} seconds`,
          [],
          { 'Retry-After': String(DEPENDENCY_RETRY_AFTER) },
        );
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}
