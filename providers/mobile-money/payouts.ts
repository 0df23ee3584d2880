import { z } from 'zod';
import {
  type MobileMoneyClient,
  type MobileMoneyClientOptions,
  type MobileMoneyOperation,
  toProviderPhone,
} from './protocol';
import { securityCredentials } from './security-credential';
import {
  type Answer,
  bounded,
  failure,
  type MobileMoneyTransport,
  ok,
  providerValue,
  unreadable,
  wholeShillings,
} from './transport';

/**
 * Payouts: send money (B2C) and the Transaction Status query that asks about a payout whose
 * result did not come, both made by the initiator with a SecurityCredential. ./client.ts
 * composes them with the collections over ./transport.ts.
 */

/** B2C and Transaction Status are answered alike: accepted, with the request's ids. */
const acceptedAnswer = z.object({
  ConversationID: z.string().min(1),
  OriginatorConversationID: z.string(),
  ResponseCode: providerValue,
});

/** Reads an accepted B2C or Transaction Status answer; anything else is a MobileMoneyError. */
function accepted(operation: MobileMoneyOperation, answer: Answer) {
  if (!ok(answer)) throw failure(operation, answer);
  const parsed = acceptedAnswer.safeParse(answer.body);
  if (!parsed.success) throw unreadable(operation, answer);
  return {
    conversationId: parsed.data.ConversationID,
    originatorConversationId: parsed.data.OriginatorConversationID,
    responseCode: String(parsed.data.ResponseCode),
  };
}

export function createPayouts(
  transport: MobileMoneyTransport,
  options: Pick<
    MobileMoneyClientOptions,
    'shortCode' | 'b2cShortCode' | 'initiatorName' | 'initiatorPassword' | 'certificate'
  >,
): Pick<MobileMoneyClient, 'b2c' | 'transactionStatus'> {
  const b2cShortCode = options.b2cShortCode ?? options.shortCode;
  // Reads the certificate now: a wrong one would only show as Result 2001 on every payout.
  const securityCredential = securityCredentials(options.certificate, options.initiatorPassword);
  const { post } = transport;

  /** The initiator's part of B2C and Transaction Status bodies (a new SecurityCredential each time). */
  const initiator = () => ({ SecurityCredential: securityCredential(), PartyA: b2cShortCode });

  return {
    async b2c(request) {
      if (!request.originatorConversationId) throw new RangeError('originatorConversationId must not be empty');
      // v3, not the legacy v1: only v3 takes our OriginatorConversationID, which makes a retry safe.
      const answer = await post('b2c', '/mpesa/b2c/v3/paymentrequest', {
        OriginatorConversationID: request.originatorConversationId,
        InitiatorName: options.initiatorName,
        ...initiator(),
        CommandID: request.commandId ?? 'BusinessPayment',
        Amount: wholeShillings(request.amount),
        PartyB: toProviderPhone(request.phone),
        Remarks: bounded(request.remarks, 100, 'remarks'),
        QueueTimeOutURL: request.queueTimeoutUrl,
        ResultURL: request.resultUrl,
        ...(request.occasion && { Occasion: request.occasion.slice(0, 100) }),
      });
      return accepted('b2c', answer);
    },

    async transactionStatus(request) {
      if (!request.originalConversationId && !request.receipt)
        throw new RangeError('a status query needs the originalConversationId or the receipt');
      // Asking twice is harmless: on any failure the caller simply asks again later.
      const answer = await post('transactionStatus', '/mpesa/transactionstatus/v1/query', {
        Initiator: options.initiatorName,
        ...initiator(),
        CommandID: 'TransactionStatusQuery',
        ...(request.receipt && { TransactionID: request.receipt }),
        ...(request.originalConversationId && { OriginalConversationID: request.originalConversationId }),
        IdentifierType: '4',
        ResultURL: request.resultUrl,
        QueueTimeOutURL: request.queueTimeoutUrl,
        Remarks: bounded(request.remarks, 100, 'remarks'),
        ...(request.occasion && { Occasion: request.occasion.slice(0, 100) }),
      });
      return accepted('transactionStatus', answer);
    },
  };
}
