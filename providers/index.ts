import type { Config } from '../config';
import { createBankClient } from './bank/client';
import type { BankClient } from './bank/protocol';
import { createEmailClient } from './email/client';
import type { EmailClient } from './email/protocol';
import { createSmsClient } from './sms/client';
import type { SmsClient } from './sms/protocol';
import { createKycProviderClient, type KycProviderClient } from './kyc/client';
import { createMobileMoneyClient } from './mobile-money/client';
import { configuredCertificate } from './mobile-money/security-credential';
import type { MobileMoneyClient } from './mobile-money/protocol';
import { createObjectStore, type ObjectStore } from './storage';
import { createExtractionClient } from './extraction/client';
import type { InvoiceExtractionClient } from './extraction/protocol';
import { servicePorts } from './webhooks/addresses';
import { createWebhookClient, type WebhookClient } from './webhooks/client';

/**
 * The provider clients the API and activities are built with, each behind a small interface.
 * Tests and `npm start` point them at the simulators; nothing else differs.
 */
export interface Providers {
  kyc: KycProviderClient;
  mobileMoney: MobileMoneyClient;
  /** Current-account self-service's providers: present once configured (npm start and the tests run simulators). */
  sms?: SmsClient;
  email?: EmailClient;
  bank?: BankClient;
  /** Where merchants' financing documents are uploaded (S3 or an S3-compatible store). */
  storage: ObjectStore;
  /** Reads invoices (Azure AI Document Intelligence's prebuilt-invoice model): present once configured. */
  extraction?: InvoiceExtractionClient;
  /** Posts signed events to client apps' webhook endpoints. */
  webhooks: WebhookClient;
}

/** The named settings, or an error naming the missing ones (npm start and the tests run simulators). */
function required<K extends keyof Config>(config: Config, keys: K[]): { [P in K]-?: NonNullable<Config[P]> } {
  const missing = keys.filter((key) => !config[key]);
  if (missing.length > 0)
    throw new Error(
      `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required (npm start runs simulators)`,
    );
  return config as unknown as { [P in K]-?: NonNullable<Config[P]> };
}

export function createProviders(config: Config): Providers {
  const kyc = required(config, ['KYC_PROVIDER_URL', 'KYC_PARTNER_ID', 'KYC_API_KEY']);
  const mm = required(config, [
    'MOBILE_MONEY_URL',
    'MOBILE_MONEY_CONSUMER_KEY',
    'MOBILE_MONEY_CONSUMER_SECRET',
    'MOBILE_MONEY_SHORT_CODE',
    'MOBILE_MONEY_PASSKEY',
    'MOBILE_MONEY_INITIATOR_NAME',
    'MOBILE_MONEY_INITIATOR_PASSWORD',
  ]);
  return {
    kyc: createKycProviderClient({
      baseUrl: kyc.KYC_PROVIDER_URL,
      partnerId: kyc.KYC_PARTNER_ID,
      apiKey: kyc.KYC_API_KEY,
      ca: config.KYC_PROVIDER_CA,
      uploadHosts: config.KYC_UPLOAD_HOSTS,
    }),
    mobileMoney: createMobileMoneyClient({
      baseUrl: mm.MOBILE_MONEY_URL,
      consumerKey: mm.MOBILE_MONEY_CONSUMER_KEY,
      consumerSecret: mm.MOBILE_MONEY_CONSUMER_SECRET,
      shortCode: mm.MOBILE_MONEY_SHORT_CODE,
      passkey: mm.MOBILE_MONEY_PASSKEY,
      initiatorName: mm.MOBILE_MONEY_INITIATOR_NAME,
      initiatorPassword: mm.MOBILE_MONEY_INITIATOR_PASSWORD,
      certificate: configuredCertificate(config),
    }),
    storage: createObjectStore(config),
    ...(config.EXTRACTION_URL && {
      extraction: createExtractionClient({
        endpoint: config.EXTRACTION_URL,
        apiKey: required(config, ['EXTRACTION_API_KEY']).EXTRACTION_API_KEY,
      }),
    }),
    ...currentAccountProviders(config),
    webhooks: createWebhookClient({
      allowed: config.WEBHOOK_ALLOWED_ADDRESSES,
      timeoutMs: config.WEBHOOK_TIMEOUT,
      userAgent: 'lending-service-webhooks/1',
      ownPorts: servicePorts(config),
    }),
  };
}

/** The SMS gateway, e-mail and bank clients, each once its URL is set (then its credentials are required). */
function currentAccountProviders(config: Config): Pick<Providers, 'sms' | 'email' | 'bank'> {
  const providers: Pick<Providers, 'sms' | 'email' | 'bank'> = {};
  if (config.SMS_PROVIDER_URL) {
    const sms = required(config, ['SMS_USERNAME', 'SMS_API_KEY']);
    providers.sms = createSmsClient({
      baseUrl: config.SMS_PROVIDER_URL,
      username: sms.SMS_USERNAME,
      apiKey: sms.SMS_API_KEY,
      senderId: config.SMS_SENDER_ID,
    });
  }
  if (config.EMAIL_PROVIDER_URL) {
    const email = required(config, ['EMAIL_API_KEY', 'EMAIL_FROM']);
    providers.email = createEmailClient({
      baseUrl: config.EMAIL_PROVIDER_URL,
      apiKey: email.EMAIL_API_KEY,
      from: { email: email.EMAIL_FROM },
    });
  }
  if (config.BANK_URL) {
    const bank = required(config, ['BANK_CLIENT_ID', 'BANK_CLIENT_SECRET']);
    providers.bank = createBankClient({
      baseUrl: config.BANK_URL,
      clientId: bank.BANK_CLIENT_ID,
      clientSecret: bank.BANK_CLIENT_SECRET,
    });
  }
  return providers;
}
