import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes, so an operator can find any run in the Temporal UI by the ids the
 * API returns (e.g. `OrganizationId = "org-demo-lender" AND ApplicationId = "<uuid>"`).
 * Registered on the dev server at start; production clusters register them once
 * (`temporal operator search-attribute create`, see the README).
 */
export const OrganizationId = defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD);
export const UserId = defineSearchAttributeKey('UserId', SearchAttributeType.KEYWORD);
export const ApplicationId = defineSearchAttributeKey('ApplicationId', SearchAttributeType.KEYWORD);
export const AccountId = defineSearchAttributeKey('AccountId', SearchAttributeType.KEYWORD);
export const TransactionId = defineSearchAttributeKey('TransactionId', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [OrganizationId, UserId, ApplicationId, AccountId, TransactionId];
