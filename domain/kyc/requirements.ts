import type { ProviderApiVersion } from './provider-version';

/**
 * What a verification submission must carry on each provider generation: the GET requirements
 * publish it and the POST verification enforces it, from this one rule. v3's enhanced document
 * verification itself requires 6 to 8 JPEG liveness frames, a JPEG selfie and consent
 * (protocols/kyc-provider.md); configuration may only narrow that, never loosen it.
 */
export const NOTICE_LANGUAGE = 'EN';

const V3_LIVENESS = { min: 6, max: 8 } as const;

export interface VerificationRules {
  requiresLiveness: boolean;
  minLiveness: number;
  maxLiveness: number;
  requiresConsent: boolean;
  /** Image types the selfie and liveness frames may have (the document may be JPEG or PNG on both). */
  faceImageTypes: readonly string[];
}

export function verificationRules(
  version: ProviderApiVersion,
  settings: { minLiveness: number; maxLiveness: number; consentRequired: boolean },
): VerificationRules {
  if (version === 'v3') {
    const min = Math.min(V3_LIVENESS.max, Math.max(V3_LIVENESS.min, settings.minLiveness));
    return {
      requiresLiveness: true,
      minLiveness: min,
      maxLiveness: Math.max(min, Math.min(V3_LIVENESS.max, settings.maxLiveness)),
      requiresConsent: true,
      faceImageTypes: ['image/jpeg'],
    };
  }
  // v2 takes frames when the client has them (active liveness), and a lone selfie otherwise.
  return {
    requiresLiveness: false,
    minLiveness: 0,
    maxLiveness: settings.maxLiveness,
    requiresConsent: settings.consentRequired,
    faceImageTypes: ['image/jpeg', 'image/png'],
  };
}
