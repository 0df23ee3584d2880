import {
  API_VERSION,
  type AzureAnalyzeResult,
  type AzureDocumentField,
  INVOICE_MODEL_ID,
  isCalendarDate,
} from '../../providers/extraction/protocol';
import type { DocumentFormat } from './model';

/**
 * What the simulator makes of a document's bytes: its format by its magic bytes, and the
 * simulated OCR that reads the bytes as latin1 and answers the invoice lines it finds (see
 * ./model.ts) in Azure's analyzeResult shape, with plausible pages, polygons and spans.
 */

const HEIF_BRANDS = new Set(['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis', 'hevm', 'hevs', 'mif1', 'msf1']);

/** The format of a document by its first bytes, or null. */
export function formatOf(bytes: Buffer): DocumentFormat | null {
  const at = (offset: number, signature: number[]) => signature.every((b, i) => bytes[offset + i] === b);
  if (bytes.subarray(0, 5).toString('latin1') === '%PDF-') return 'pdf';
  if (at(0, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (at(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  // "BM", reserved bytes zero, a known DIB header size: not any text that begins with BM.
  if (
    at(0, [0x42, 0x4d]) &&
    bytes.length >= 26 &&
    at(6, [0, 0, 0, 0]) &&
    [12, 40, 52, 56, 108, 124].includes(bytes.readUInt32LE(14))
  )
    return 'bmp';
  if (at(0, [0x49, 0x49, 0x2a, 0x00]) || at(0, [0x4d, 0x4d, 0x00, 0x2a])) return 'tiff';
  if (bytes.subarray(4, 8).toString('latin1') === 'ftyp' && HEIF_BRANDS.has(bytes.subarray(8, 12).toString('latin1')))
    return 'heif';
  return null;
}

/** An amount as the simulated OCR reads it: an ISO code, then digits with optional thousands commas and decimals. */
function currencyOf(text: string): AzureDocumentField['valueCurrency'] | undefined {
  const parts = /^([A-Z]{3})\s*((?:\d{1,3}(?:,\d{3})+)|\d+)(\.\d+)?$/.exec(text);
  if (!parts) return undefined;
  const amount = Number(`${parts[2]!.replace(/,/g, '')}${parts[3] ?? ''}`);
  return Number.isFinite(amount) ? { amount, currencyCode: parts[1]! } : undefined;
}

/** The lines the simulated OCR recognizes, and the Azure field each becomes. */
const READERS: { field: string; label: RegExp; value: (text: string) => Partial<AzureDocumentField> | undefined }[] = [
  { field: 'InvoiceId', label: /^Invoice number:\s*(.+)$/i, value: (t) => ({ type: 'string', valueString: t }) },
  { field: 'VendorName', label: /^Vendor:\s*(.+)$/i, value: (t) => ({ type: 'string', valueString: t }) },
  { field: 'CustomerName', label: /^Customer:\s*(.+)$/i, value: (t) => ({ type: 'string', valueString: t }) },
  {
    field: 'InvoiceTotal',
    label: /^Total:\s*(.+)$/i,
    value: (t) => {
      const valueCurrency = currencyOf(t);
      return valueCurrency && { type: 'currency', valueCurrency };
    },
  },
  {
    field: 'AmountDue',
    label: /^Amount due:\s*(.+)$/i,
    value: (t) => {
      const valueCurrency = currencyOf(t);
      return valueCurrency && { type: 'currency', valueCurrency };
    },
  },
  // A date Azure cannot normalize keeps its text and has no valueDate.
  {
    field: 'InvoiceDate',
    label: /^Invoice date:\s*(.+)$/i,
    value: (t) => ({ type: 'date', ...(isCalendarDate(t) && { valueDate: t }) }),
  },
  {
    field: 'DueDate',
    label: /^Due date:\s*(.+)$/i,
    value: (t) => ({ type: 'date', ...(isCalendarDate(t) && { valueDate: t }) }),
  },
];

/** The simulated OCR: the document's printable lines, and the invoice fields among them, in Azure's shape. */
export function readDocument(bytes: Buffer, format: DocumentFormat): AzureAnalyzeResult {
  const lines = bytes
    .toString('latin1')
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    // Text a reader would see: printable, not a PDF comment or a test directive.
    .filter((line) => /^[\x20-\x7e\xa0-\xff\t]+$/.test(line) && /[A-Za-z0-9]/.test(line))
    .filter((line) => !line.startsWith('%') && !/^SIMULATE:/i.test(line))
    .slice(0, 2_000);
  const pdf = format === 'pdf';
  const [width, height, unit] = pdf ? [8.5, 11, 'inch' as const] : [1700, 2200, 'pixel' as const];
  const step = pdf ? 0.25 : 50;
  const polygon = (row: number, chars: number) => {
    const [x0, y0] = [step * 2, step * (row + 2)];
    const [x1, y1] = [x0 + chars * step * 0.4, y0 + step * 0.8];
    return [x0, y0, x1, y0, x1, y1, x0, y1].map((n) => Math.round(n * 100) / 100);
  };
  let offset = 0;
  const placed = lines.map((content, row) => {
    const line = { content, row, offset };
    offset += content.length + 1;
    return line;
  });
  const content = lines.join('\n');
  const fields: Record<string, AzureDocumentField> = {};
  for (const reader of READERS)
    for (const line of placed) {
      if (fields[reader.field]) break;
      const found = reader.label.exec(line.content);
      const text = found?.[1]?.trim();
      const value = text ? reader.value(text) : undefined;
      if (!text || !value) continue;
      const start = line.offset + line.content.lastIndexOf(text);
      fields[reader.field] = {
        type: 'string',
        ...value,
        content: text,
        boundingRegions: [{ pageNumber: 1, polygon: polygon(line.row, text.length) }],
        spans: [{ offset: start, length: text.length }],
        confidence: 0.97,
      };
    }
  const page = [0, 0, width, 0, width, height, 0, height];
  return {
    apiVersion: API_VERSION,
    modelId: INVOICE_MODEL_ID,
    stringIndexType: 'textElements',
    content,
    pages: [
      {
        pageNumber: 1,
        angle: 0,
        width,
        height,
        unit,
        spans: [{ offset: 0, length: content.length }],
        lines: placed.map((line) => ({
          content: line.content,
          polygon: polygon(line.row, line.content.length),
          spans: [{ offset: line.offset, length: line.content.length }],
        })),
      },
    ],
    contentFormat: 'text',
    documents: [
      {
        docType: 'invoice',
        boundingRegions: [{ pageNumber: 1, polygon: page }],
        spans: [{ offset: 0, length: content.length }],
        fields,
        confidence: Object.keys(fields).length > 0 ? 0.95 : 0.1,
      },
    ],
  };
}
