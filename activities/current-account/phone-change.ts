import {
  claimNumberForBank,
  completePhoneChange,
  findPhoneChangeAtBank,
  recordPhoneChangeStatus,
} from '../../db/current-account/phone-change';
import type { BankDecision } from '../../workflows/current-account/messages';
import type { Needs } from '../deps';
import { changeDecision, submitted } from './bank';
import { needed, transition } from './steps';

/** The phone-change run's steps: its row, and the bank's change of the customer's number. */
export function createPhoneChangeActivities(deps: Needs<'db' | 'providers' | 'clock'>) {
  const { db, providers, clock } = deps;
  const bank = () => needed(providers.bank, 'The bank');
  return {
    async recordPhoneChange(input: {
      organizationId: string;
      changeId: string;
      status: 'AWAITING_AUTHORIZATION' | 'AWAITING_CONFIRMATION' | 'PROCESSING' | 'REJECTED';
      reason?: string;
    }) {
      await recordPhoneChangeStatus(db, input.organizationId, input.changeId, transition(clock, input));
    },

    /** Asks the bank to change the number (our change id is its reference). */
    async changeNumberAtBank(input: { organizationId: string; changeId: string }): Promise<BankDecision> {
      const row = await findPhoneChangeAtBank(db, input.organizationId, input.changeId);
      if (!row?.bank_customer_id) return { status: 'REFUSED', code: 'CUSTOMER_NOT_FOUND' };
      // Claimed before the bank is asked: a number another user took meanwhile, or another user's
      // change is taking at the bank, never reaches it from here.
      if ((await claimNumberForBank(db, input.organizationId, input.changeId, row, clock.now())) === 'NUMBER_TAKEN')
        return { status: 'REFUSED', code: 'NUMBER_TAKEN' };
      const ids = { reference: input.changeId, bankCustomerId: row.bank_customer_id };
      return changeDecision(() =>
        submitted(
          () => bank().changeMobileNumber({ ...ids, newMobileNumber: row.new_phone_number }),
          () => bank().mobileNumberChangeStatus(ids),
        ),
      );
    },

    async numberChangeStatus(input: { organizationId: string; changeId: string }): Promise<BankDecision> {
      const row = await findPhoneChangeAtBank(db, input.organizationId, input.changeId);
      if (!row?.bank_customer_id) return { status: 'REFUSED', code: 'CUSTOMER_NOT_FOUND' };
      const bankCustomerId = row.bank_customer_id;
      return changeDecision(() => bank().mobileNumberChangeStatus({ reference: input.changeId, bankCustomerId }));
    },

    async completePhoneChange(input: { organizationId: string; changeId: string }) {
      return completePhoneChange(db, input.organizationId, input.changeId, clock.now());
    },
  };
}
