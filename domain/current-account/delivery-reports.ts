/**
 * The statuses an SMS gateway's delivery report can carry, as they are kept on an OTP send. The
 * provider's protocol (providers/sms/protocol.ts) reports them, and the store keeps the last one.
 * A final status is never replaced by an interim report that arrives after it.
 */
export const DELIVERY_STATUSES = [
  'Sent',
  'Submitted',
  'Buffered',
  'Success',
  'Failed',
  'Rejected',
  'AbsentSubscriber',
  'Expired',
] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const FINAL: readonly string[] = ['Success', 'Failed', 'Rejected', 'AbsentSubscriber', 'Expired'];
/** The last five statuses are final. */
export const isFinalDelivery = (status: string) => FINAL.includes(status);
