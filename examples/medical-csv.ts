/**
 * The CSV side of the medical-insurance import example: parsing (RFC 4180
 * quoting), one record's checks, and the row key that makes the import
 * idempotent. No I/O here.
 */

export interface ClaimRecord {
  /** 1-based line in the file (the header is line 1). */
  line: number;
  patientId: string;
  patientName: string;
  insuranceNo: string;
  visitDate: string;
  /** Amount in cents: no floating-point money. */
  amountCents: number;
}

export type Checked = { ok: true; record: ClaimRecord } | { ok: false; line: number; reason: string };

export const COLUMNS = ['patient_id', 'patient_name', 'insurance_no', 'visit_date', 'amount'] as const;

/** Splits CSV text into rows of fields; quoted fields may hold commas, quotes ("") and newlines. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') field += text[++i];
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field.trim());
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field.trim());
      if (row.some((f) => f !== '')) rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  row.push(field.trim());
  if (row.some((f) => f !== '')) rows.push(row);
  return rows;
}

/** Checks one data row against the header's columns; the reason names the field for the report. */
export function checkRow(fields: string[], line: number): Checked {
  if (fields.length !== COLUMNS.length) return { ok: false, line, reason: `expected ${COLUMNS.length} fields, found ${fields.length}` };
  const [patientId, patientName, insuranceNo, visitDate, amount] = fields as [string, string, string, string, string];
  if (!/^P\d{4,12}$/.test(patientId)) return { ok: false, line, reason: 'patient_id must look like P0001' };
  if (patientName.length === 0) return { ok: false, line, reason: 'patient_name is empty' };
  if (!/^[A-Z0-9]{6,20}$/.test(insuranceNo)) return { ok: false, line, reason: 'insurance_no must be 6-20 letters or digits' };
  if (!/^\d{4}-\d{2}-\d{2}$/.test(visitDate) || Number.isNaN(Date.parse(`${visitDate}T00:00:00Z`))) {
    return { ok: false, line, reason: 'visit_date must be a date YYYY-MM-DD' };
  }
  if (!/^\d{1,9}(\.\d{1,2})?$/.test(amount)) return { ok: false, line, reason: 'amount must be a positive decimal with at most 2 places' };
  const [units, cents = ''] = amount.split('.');
  return { ok: true, record: { line, patientId, patientName, insuranceNo, visitDate, amountCents: Number(units) * 100 + Number(cents.padEnd(2, '0')) } };
}

/** One claim per patient, insurance number and visit: the same row imported twice is the same claim. */
export function rowKey(record: ClaimRecord): string {
  return `${record.patientId}|${record.insuranceNo}|${record.visitDate}`;
}
