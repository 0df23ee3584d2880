import type { ProviderApiVersion } from '../../domain/kyc/provider-version';

/**
 * The documents the provider verifies, per country, as its configuration lists them. v3 adds
 * driving licences in Kenya. Codes are what clients send as id_type.
 */
export interface SupportedDocuments {
  country: string;
  id_types: { code: string; label: string; has_back: boolean }[];
}

const COMMON: SupportedDocuments[] = [
  {
    country: 'KE',
    id_types: [
      { code: 'IDENTITY_CARD', label: 'National ID card', has_back: true },
      { code: 'PASSPORT', label: 'Passport', has_back: false },
      { code: 'ALIEN_CARD', label: 'Alien card', has_back: true },
    ],
  },
  {
    country: 'UG',
    id_types: [
      { code: 'IDENTITY_CARD', label: 'National ID card', has_back: true },
      { code: 'PASSPORT', label: 'Passport', has_back: false },
    ],
  },
  {
    country: 'TZ',
    id_types: [
      { code: 'IDENTITY_CARD', label: 'National ID card', has_back: true },
      { code: 'PASSPORT', label: 'Passport', has_back: false },
    ],
  },
];

export function supportedDocuments(version: ProviderApiVersion): SupportedDocuments[] {
  if (version === 'v2') return COMMON;
  return COMMON.map((entry) =>
    entry.country === 'KE'
      ? {
          ...entry,
          id_types: [...entry.id_types, { code: 'DRIVERS_LICENSE', label: 'Driving licence', has_back: true }],
        }
      : entry,
  );
}

export function isSupportedDocument(version: ProviderApiVersion, country: string, idType: string): boolean {
  return supportedDocuments(version).some(
    (entry) => entry.country === country && entry.id_types.some((t) => t.code === idType),
  );
}
