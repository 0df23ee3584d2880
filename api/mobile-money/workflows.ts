import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import type { Config } from '../../config';
import { workflowIds } from '../../workflows/ids';
import {
  type B2cOutcome,
  b2cOutcomeSignal,
  type SendMoneyInput,
  type StkCallbackTrigger,
  stkCallbackSignal,
  type StkPushInput,
  type StkResult,
  stkResultSignal,
} from '../../workflows/mobile-money/messages';
import { OrganizationId } from '../../workflows/search-attributes';

/**
 * The one module through which the API drives the stk-push and send-money workflows. A start
 * that finds the run already there is success (the id is the transaction's); a signal to a run
 * that has ended answers false, so the callback route can record the callback as late.
 */
export function transactionWorkflows(temporal: Client, config: Config) {
  async function start(type: 'stkPush' | 'sendMoney', workflowId: string, input: StkPushInput | SendMoneyInput, organizationId: string) {
    try {
      await temporal.workflow.start(type, {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        workflowId,
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [{ key: OrganizationId, value: organizationId }],
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
  async function signal<T>(workflowId: string, send: (handle: ReturnType<Client['workflow']['getHandle']>) => Promise<T>): Promise<boolean> {
    try {
      await send(temporal.workflow.getHandle(workflowId));
      return true;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }

  return {
    startStkPush: (transactionId: string, organizationId: string) =>
      start(
        'stkPush',
        workflowIds.stkPush(transactionId),
        {
          transactionId,
          callbackWaitMs: config.STK_PUSH_CALLBACK_WAIT,
          queryIntervalMs: config.STK_PUSH_QUERY_INTERVAL,
          queryDeadlineMs: config.STK_PUSH_QUERY_DEADLINE,
        },
        organizationId,
      ),
    startSendMoney: (transactionId: string, organizationId: string) =>
      start('sendMoney', workflowIds.sendMoney(transactionId), { transactionId, resultWaitMs: config.B2C_RESULT_WAIT }, organizationId),
    stkResult: (transactionId: string, result: StkResult) => signal(workflowIds.stkPush(transactionId), (h) => h.signal(stkResultSignal, result)),
    stkCallback: (transactionId: string, trigger: StkCallbackTrigger) => signal(workflowIds.stkPush(transactionId), (h) => h.signal(stkCallbackSignal, trigger)),
    b2cOutcome: (transactionId: string, outcome: B2cOutcome) => signal(workflowIds.sendMoney(transactionId), (h) => h.signal(b2cOutcomeSignal, outcome)),
  };
}
export type TransactionWorkflows = ReturnType<typeof transactionWorkflows>;
