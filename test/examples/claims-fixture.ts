/** The claims file both medical import tests read (examples/import-medical.ts and its flow). */
export const HEADER = 'patient_id,patient_name,insurance_no,visit_date,amount';

/** 240 good claims, 6 bad rows and 4 repeats of earlier claims: 250 data rows. */
export function claimsCsv(): string {
  const good = Array.from(
    { length: 240 },
    (_, i) => `P${String(1000 + i)},"Patient, No. ${i}",INS${String(100000 + i)},2026-0${1 + (i % 9)}-1${i % 10},${i}.5`,
  );
  const bad = [
    'P1,Short Id,INS123456,2026-01-01,1',
    'P2001,,INS123456,2026-01-01,1',
    'P2002,Name,ins-lower,2026-01-01,1',
    'P2003,Name,INS123456,2026-13-45,1',
    'P2004,Name,INS123456,2026-01-01,-3',
    'P2005,Name,INS123456,2026-01-01',
  ];
  const lines = [...good.slice(0, 100), ...bad.slice(0, 3), good[5]!, good[6]!, ...good.slice(100), ...bad.slice(3), good[7]!, good[8]!];
  return `${HEADER}\n${lines.join('\n')}\n`;
}
