import type { Config } from '../config';
import { DEMO, type SeedOptions } from '../db/seeds/demo';
import { type RunningIdentityProvider, startIdentityProvider } from '../simulators/identity';
import { type RunningKycSimulator, startKycSimulator } from '../simulators/kyc';
import { selfSignedCertificate } from '../simulators/certificates';
import { type RunningMobileMoneySimulator, startMobileMoneySimulator } from '../simulators/mobile-money';
import { type RunningBankSimulator, startBankSimulator } from '../simulators/bank';
import { type RunningEmailSimulator, startEmailSimulator } from '../simulators/email';
import { type RunningSmsSimulator, startSmsSimulator } from '../simulators/sms';
import { type RunningExtractionSimulator, startExtractionSimulator } from '../simulators/extraction';
import { type RunningWebhookReceiver, startWebhookReceiver } from '../simulators/webhook-receiver';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createObjectStore } from '../providers/storage';
import { devSeedOptions, grantDemoMerchantOverHttp, withDevIdentityProvider } from './identity';
import { findObjectStoreServer, type RunningObjectStore, startObjectStore } from './object-store';
import { freePort } from './ports';

/** Development credentials of the simulated identity-verification provider (never real ones). */
const DEV_KYC = { partnerId: '2101', apiKey: 'dev-kyc-api-key-not-a-secret' };
/** And of the simulated mobile-money provider. */
export const DEV_MOBILE_MONEY = {
  consumerKey: 'dev-consumer-key',
  consumerSecret: 'dev-consumer-secret-not-a-secret',
  shortCode: '174379',
  passkey: 'dev-passkey-not-a-secret',
  initiatorName: 'dev-initiator',
  /** Encrypted per payout with the simulator's certificate into the SecurityCredential. */
  initiatorPassword: 'dev-initiator-password-not-a-secret',
};
/** And of the simulated SMS gateway, e-mail provider and bank (current-account self-service). */
export const DEV_CURRENT_ACCOUNT = {
  sms: {
    username: 'lending-dev',
    apiKey: 'dev-sms-api-key-not-a-secret',
    senderId: 'LENDER',
    callbackToken: 'dev-sms-delivery-report-token-not-a-secret',
  },
  email: { apiKey: 'SG.dev-email-api-key-not-a-secret', from: 'no-reply@lending-service.test' },
  bank: { clientId: 'dev-bank-client', clientSecret: 'dev-bank-client-secret-not-a-secret' },
  /** One-time codes are kept as HMACs under this key (the API and the worker share it). */
  otpHmacSecret: 'dev-otp-hmac-secret-not-a-secret-0123456789',
};
/** And of the simulated invoice-extraction provider (Azure Document Intelligence's protocol). */
export const DEV_EXTRACTION = { apiKey: 'dev-extraction-key-not-a-secret' };
/** The certificates of the mobile-money simulators this process started, by URL (see mobileMoneySettings). */
const simulatorCertificates = new Map<string, string>();

export interface DevelopmentProviders {
  /** The configuration pointed at the simulators (values given in the environment win). */
  config: Config;
  idp: RunningIdentityProvider;
  /** Absent when KYC_PROVIDER_URL names a real provider. */
  kyc?: RunningKycSimulator;
  /** Absent when MOBILE_MONEY_URL names a real provider. */
  mobileMoney?: RunningMobileMoneySimulator;
  /** Each absent when its URL (SMS_PROVIDER_URL, EMAIL_PROVIDER_URL, BANK_URL) names a real provider. */
  sms?: RunningSmsSimulator;
  email?: RunningEmailSimulator;
  bank?: RunningBankSimulator;
  /** Absent when EXTRACTION_URL names a real provider. */
  extraction?: RunningExtractionSimulator;
  /** Absent when OBJECT_STORE_ENDPOINT names a store. */
  objectStore?: RunningObjectStore;
  /** A client app's webhook receiver, verifying what the service sends (dev/webhooks.ts registers it). */
  webhookReceiver: RunningWebhookReceiver;
  seedOptions: SeedOptions;
  close(): Promise<void>;
}

/**
 * Starts what `npm start`, the tests and the benchmarks talk to instead of real providers: the
 * development identity provider (with the demo merchant's HTTP resource-access grant) and the
 * identity-verification provider simulator, and points the configuration at them.
 */
export async function startDevelopmentProviders(
  config: Config,
  options: {
    idpPort?: number;
    idpKeysFile?: string;
    kycPort?: number;
    kycTlsPort?: number;
    mobileMoneyPort?: number;
    mobileMoneyTlsPort?: number;
    smsPort?: number;
    emailPort?: number;
    bankPort?: number;
    extractionPort?: number;
    webhookReceiverPort?: number;
    /** The local object store: its port, data folder (a temporary one, removed at close, when absent) and binary. */
    objectStore?: { port?: number; dataDir?: string; binary?: string; log?: (line: string) => void };
  } = {},
): Promise<DevelopmentProviders> {
  const idp = await startIdentityProvider({
    port: options.idpPort,
    keysFile: options.idpKeysFile,
    partnerIssuer: DEMO.partner.issuer,
  });
  // The development API has no TLS and its port is chosen later: the simulated partner's
  // allow-list takes any https URL and this machine's loopback over http.
  const kyc = config.KYC_PROVIDER_URL
    ? undefined
    : await startKycSimulator({
        ...DEV_KYC,
        port: options.kycPort,
        tlsPort: options.kycTlsPort,
        callbackAllowList: ['https://', 'http://127.0.0.1:', 'http://localhost:'],
      });
  const mobileMoney = config.MOBILE_MONEY_URL
    ? undefined
    : await startMobileMoneySimulator({
        ...DEV_MOBILE_MONEY,
        port: options.mobileMoneyPort,
        tlsPort: options.mobileMoneyTlsPort,
      });
  if (mobileMoney) simulatorCertificates.set(mobileMoney.url, mobileMoney.certificate);
  const { sms: smsDev, email: emailDev, bank: bankDev } = DEV_CURRENT_ACCOUNT;
  const sms = config.SMS_PROVIDER_URL
    ? undefined
    : await startSmsSimulator({ ...smsDev, senderIds: [smsDev.senderId], port: options.smsPort });
  const email = config.EMAIL_PROVIDER_URL
    ? undefined
    : await startEmailSimulator({ apiKey: emailDev.apiKey, verifiedSenders: [emailDev.from], port: options.emailPort });
  const bank = config.BANK_URL ? undefined : await startBankSimulator({ ...bankDev, port: options.bankPort });
  const extraction = config.EXTRACTION_URL
    ? undefined
    : await startExtractionSimulator({ ...DEV_EXTRACTION, port: options.extractionPort });
  const webhookReceiver = await startWebhookReceiver({ port: options.webhookReceiverPort });
  const store = config.OBJECT_STORE_ENDPOINT ? undefined : await startLocalObjectStore(options.objectStore);
  if (store) await createObjectStore({ ...config, ...objectStoreSettings(store.running.endpoint) }).ensureBucket();
  const close = async () => {
    if (mobileMoney) simulatorCertificates.delete(mobileMoney.url);
    await Promise.all([
      idp.close(),
      kyc?.close(),
      mobileMoney?.close(),
      sms?.close(),
      email?.close(),
      bank?.close(),
      extraction?.close(),
      webhookReceiver.close(),
      store?.close(),
    ]);
  };
  try {
    await grantDemoMerchantOverHttp(idp);
  } catch (error) {
    await close();
    throw error;
  }
  const withIdp = withDevIdentityProvider(config, idp);
  const withKyc = kyc
    ? {
        ...withIdp,
        KYC_PROVIDER_URL: kyc.url,
        KYC_PARTNER_ID: DEV_KYC.partnerId,
        KYC_API_KEY: DEV_KYC.apiKey,
        KYC_PROVIDER_CA: kyc.certificate,
        // The simulator's storage listener: the presigned upload URL's host.
        KYC_UPLOAD_HOSTS: ['localhost'],
      }
    : withIdp;
  const withMobileMoney = mobileMoney
    ? { ...withKyc, ...mobileMoneySettings(mobileMoney.url, mobileMoney.certificate) }
    : withKyc;
  return {
    config: {
      ...withMobileMoney,
      ...currentAccountSettings({ sms: sms?.url, email: email?.url, bank: bank?.url }),
      // A key given in the environment wins over the development one.
      OTP_HMAC_SECRET: config.OTP_HMAC_SECRET ?? DEV_CURRENT_ACCOUNT.otpHmacSecret,
      ...(store && objectStoreSettings(store.running.endpoint)),
      ...(extraction && { EXTRACTION_URL: extraction.url, EXTRACTION_API_KEY: DEV_EXTRACTION.apiKey }),
      // The receiver simulator listens on loopback; production allows public addresses only.
      WEBHOOK_ALLOWED_ADDRESSES:
        config.WEBHOOK_ALLOWED_ADDRESSES === 'public' ? 'loopback' : config.WEBHOOK_ALLOWED_ADDRESSES,
    },
    idp,
    kyc,
    mobileMoney,
    sms,
    email,
    bank,
    extraction,
    webhookReceiver,
    objectStore: store?.running,
    seedOptions: devSeedOptions(idp),
    close,
  };
}

/**
 * The configuration that points the service at a mobile-money simulator with the development
 * credentials, its certificate included (PEM: the B2C SecurityCredential is encrypted with it).
 * Without `certificate`, that of the simulator this process started at `url`; for a simulator
 * in another process (GET /_control/certificate gives its certificate) or no simulator at all, a
 * certificate nobody holds the key of: everything works but payouts, which end in Result 2001,
 * as they would with the wrong certificate.
 */
export function mobileMoneySettings(url: string, certificate?: string) {
  return {
    MOBILE_MONEY_URL: url,
    MOBILE_MONEY_CONSUMER_KEY: DEV_MOBILE_MONEY.consumerKey,
    MOBILE_MONEY_CONSUMER_SECRET: DEV_MOBILE_MONEY.consumerSecret,
    MOBILE_MONEY_SHORT_CODE: DEV_MOBILE_MONEY.shortCode,
    MOBILE_MONEY_PASSKEY: DEV_MOBILE_MONEY.passkey,
    MOBILE_MONEY_INITIATOR_NAME: DEV_MOBILE_MONEY.initiatorName,
    MOBILE_MONEY_INITIATOR_PASSWORD: DEV_MOBILE_MONEY.initiatorPassword,
    MOBILE_MONEY_CERTIFICATE: certificate ?? simulatorCertificates.get(url) ?? unknownCertificate(),
  };
}

/** The local object store's root credential (development only). */
export const DEV_OBJECT_STORE = { accessKeyId: 'lending-dev', secretAccessKey: 'dev-object-store-secret-not-a-secret' };

/** The configuration that points the service at a local object store with the development credential. */
export function objectStoreSettings(endpoint: string) {
  return {
    OBJECT_STORE_ENDPOINT: endpoint,
    OBJECT_STORE_ACCESS_KEY_ID: DEV_OBJECT_STORE.accessKeyId,
    OBJECT_STORE_SECRET_ACCESS_KEY: DEV_OBJECT_STORE.secretAccessKey,
    OBJECT_STORE_FORCE_PATH_STYLE: true,
  };
}

/** versitygw on a local port with its bucket made; a temporary data folder goes when it closes. */
async function startLocalObjectStore(
  options: { port?: number; dataDir?: string; binary?: string; log?: (line: string) => void } = {},
) {
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'lending-object-store-')));
  const running = await startObjectStore({
    binary: await findObjectStoreServer({ explicitPath: options.binary, log: options.log }),
    dataDir,
    port: options.port ?? (await freePort()),
    region: 'us-east-1',
    ...DEV_OBJECT_STORE,
  });
  const close = async () => {
    await running.stop();
    if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
  };
  return { running, close };
}

/**
 * The configuration that points the service at the current-account simulators (SMS gateway,
 * e-mail, bank) with the development credentials; a simulator not given keeps its settings.
 */
export function currentAccountSettings(urls: { sms?: string; email?: string; bank?: string }) {
  const { sms, email, bank, otpHmacSecret } = DEV_CURRENT_ACCOUNT;
  return {
    ...(urls.sms && {
      OTP_HMAC_SECRET: otpHmacSecret,
      SMS_PROVIDER_URL: urls.sms,
      SMS_USERNAME: sms.username,
      SMS_API_KEY: sms.apiKey,
      SMS_SENDER_ID: sms.senderId,
      SMS_CALLBACK_TOKEN: sms.callbackToken,
    }),
    ...(urls.email && { EMAIL_PROVIDER_URL: urls.email, EMAIL_API_KEY: email.apiKey, EMAIL_FROM: email.from }),
    ...(urls.bank && { BANK_URL: urls.bank, BANK_CLIENT_ID: bank.clientId, BANK_CLIENT_SECRET: bank.clientSecret }),
  };
}

let unknown: string | undefined;
/** Made once, on first need (an RSA key pair takes a moment). */
const unknownCertificate = () => (unknown ??= selfSignedCertificate({ commonName: 'no mobile-money simulator' }).cert);
