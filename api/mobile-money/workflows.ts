import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import type { Config } from '../../config';
import { workflowIds } from '../../workflows/ids';
import {
  sendMoneyEarlyResultSignal,
  type SendMoneyResult,
  sendMoneyResultSignal,
  type SendMoneyStatusAnswer,
  sendMoneyStatusSignal,
  type StkCallbackTrigger,
  stkCallbackSignal,
  type StkResult,
  stkResultSignal,
} from '../../workflows/mobile-money/messages';
import type { sendMoney } from '../../workflows/mobile-money/send-money';
import type { stkPush } from '../../workflows/mobile-money/stk-push';
import { AccountId, OrganizationId, TransactionId } from '../../workflows/search-attributes';

/**
 * The one module through which the API drives the stk-push and send-money workflows. A start
 * that finds the run already there is success (the id is the transaction's); a signal to a run
 * that has ended answers false, so the callback route can record the callback as late. Runs
 * carry the organization, account and transaction ids as search attributes, so an operator finds
 * a push or a payout in the Temporal UI by the ids the API returns.
 */
export function mobileMoneyWorkflows(
  temporal: Client,
  config: Pick<
    Config,
    | 'SEND_MONEY_RESULT_WAIT'
    | 'SEND_MONEY_STATUS_QUERY_AFTER'
    | 'SEND_MONEY_STATUS_QUERY_INTERVAL'
    | 'STK_PUSH_CALLBACK_WAIT'
    | 'STK_PUSH_QUERY_DEADLINE'
    | 'STK_PUSH_QUERY_INTERVAL'
    | 'TEMPORAL_TASK_QUEUE'
  >,
) {
  const options = (workflowId: string, transaction: MoneyMovement) => ({
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    workflowId,
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    typedSearchAttributes: [
      { key: OrganizationId, value: transaction.organizationId },
      { key: AccountId, value: transaction.accountId },
      { key: TransactionId, value: transaction.transactionId },
    ],
  });
  async function started(start: () => Promise<unknown>) {
    try {
      await start();
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
  async function signal<T>(
    workflowId: string,
    send: (handle: ReturnType<Client['workflow']['getHandle']>) => Promise<T>,
  ): Promise<boolean> {
    try {
      await send(temporal.workflow.getHandle(workflowId));
      return true;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }

  return {
    startStkPush: (transaction: MoneyMovement) =>
      started(() =>
        temporal.workflow.start<typeof stkPush>('stkPush', {
          ...options(workflowIds.stkPush(transaction.transactionId), transaction),
          args: [
            {
              transactionId: transaction.transactionId,
              organizationId: transaction.organizationId,
              callbackWaitMs: config.STK_PUSH_CALLBACK_WAIT,
              queryIntervalMs: config.STK_PUSH_QUERY_INTERVAL,
              queryDeadlineMs: config.STK_PUSH_QUERY_DEADLINE,
              ...(transaction.repayment && { repayment: true }),
            },
          ],
        }),
      ),
    startSendMoney: (transaction: MoneyMovement) =>
      started(() =>
        temporal.workflow.start<typeof sendMoney>('sendMoney', {
          ...options(workflowIds.sendMoney(transaction.transactionId), transaction),
          args: [
            {
              transactionId: transaction.transactionId,
              organizationId: transaction.organizationId,
              resultWaitMs: config.SEND_MONEY_RESULT_WAIT,
              statusQueryAfterMs: config.SEND_MONEY_STATUS_QUERY_AFTER,
              statusQueryIntervalMs: config.SEND_MONEY_STATUS_QUERY_INTERVAL,
            },
          ],
        }),
      ),
    stkResult: (transactionId: string, result: StkResult) =>
      signal(workflowIds.stkPush(transactionId), (h) => h.signal(stkResultSignal, result)),
    stkCallback: (transactionId: string, trigger: StkCallbackTrigger) =>
      signal(workflowIds.stkPush(transactionId), (h) => h.signal(stkCallbackSignal, trigger)),
    sendMoneyResult: (transactionId: string, outcome: SendMoneyResult) =>
      signal(workflowIds.sendMoney(transactionId), (h) => h.signal(sendMoneyResultSignal, outcome)),
    sendMoneyEarlyResult: (transactionId: string, outcome: SendMoneyResult) =>
      signal(workflowIds.sendMoney(transactionId), (h) => h.signal(sendMoneyEarlyResultSignal, outcome)),
    sendMoneyStatus: (transactionId: string, answer: SendMoneyStatusAnswer) =>
      signal(workflowIds.sendMoney(transactionId), (h) => h.signal(sendMoneyStatusSignal, answer)),
  };
}
export type MobileMoneyWorkflows = ReturnType<typeof mobileMoneyWorkflows>;

/** The transaction a money workflow runs for. */
export interface MoneyMovement {
  transactionId: string;
  organizationId: string;
  accountId: string;
  /** A push on a credit account: a loan repayment once posted. */
  repayment?: boolean;
}
