import type { InvalidParam } from '../../domain/errors';

/** What the verification routes accept as an image: base64 (a data: URL prefix allowed) of a JPEG or PNG. */
export interface DecodedImage {
  content: Buffer;
  contentType: 'image/jpeg' | 'image/png';
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const DATA_URL = /^data:image\/(?:jpeg|jpg|png);base64,/;

export const KycSubCode = {
  INVALID_BASE64: 'INVALID_BASE64',
  UNSUPPORTED_IMAGE_TYPE: 'UNSUPPORTED_IMAGE_TYPE',
  IMAGE_TOO_LARGE: 'IMAGE_TOO_LARGE',
  UNSUPPORTED_DOCUMENT: 'UNSUPPORTED_DOCUMENT',
  CONSENT_REQUIRED: 'CONSENT_REQUIRED',
  VERSION_MISMATCH: 'VERSION_MISMATCH',
} as const;

/** Decodes one image, or says why it is refused (path is its place in the body). */
export function decodeImage(text: string, path: string, maxBytes: number): DecodedImage | InvalidParam {
  const base64 = text.replace(DATA_URL, '');
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) {
    return { path, reason: 'not valid base64', sub_code: KycSubCode.INVALID_BASE64 };
  }
  const content = Buffer.from(base64, 'base64');
  if (content.length > maxBytes)
    return { path, reason: `larger than ${maxBytes} bytes`, sub_code: KycSubCode.IMAGE_TOO_LARGE };
  if (content[0] === 0xff && content[1] === 0xd8 && content[2] === 0xff) return { content, contentType: 'image/jpeg' };
  if (content.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return { content, contentType: 'image/png' };
  return { path, reason: 'must be a JPEG or PNG image', sub_code: KycSubCode.UNSUPPORTED_IMAGE_TYPE };
}

export const isInvalid = (value: DecodedImage | InvalidParam): value is InvalidParam => 'sub_code' in value;
