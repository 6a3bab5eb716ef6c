import { describe, expect, it } from 'vitest';
import { auditCsvRow, csvCell, csvRow } from '../../src/operations/dashboard/audit-csv.js';
import { auditQueryString, MAX_AUDIT_PAGE, parseAuditQuery } from '../../src/operations/dashboard/audit-query.js';

describe('audit CSV', () => {
  it('quotes fields with commas, quotes and line breaks, doubling the quotes', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('cr\rhere')).toBe('"cr\rhere"');
    expect(csvCell(null)).toBe('');
    expect(csvCell(42)).toBe('42');
    expect(csvRow(['a', 'b,c', null])).toBe('a,"b,c",\r\n');
  });

  it('defuses cells a spreadsheet would run as a formula (= + - @, tab, carriage return)', () => {
    expect(csvCell('=1+1')).toBe("'=1+1");
    expect(csvCell('+SUM(A1)')).toBe("'+SUM(A1)");
    expect(csvCell('-2+3')).toBe("'-2+3");
    expect(csvCell('@cmd')).toBe("'@cmd");
    expect(csvCell('\t=1')).toBe("'\t=1");
    // Defused and quoted: the leading quote sits inside the CSV quotes.
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe('"\'=HYPERLINK(""http://x"",""y"")"');
    expect(csvCell('\r=1')).toBe('"\'\r=1"');
    // Only the first character counts.
    expect(csvCell('a=b')).toBe('a=b');
  });

  it('writes one audit row in the column order, every text cell through the cleaner', () => {
    const row = auditCsvRow(
      { id: 'id1', at: Date.UTC(2026, 0, 2, 3, 4, 5), kind: 'approval', actor: 'slack:U1', channel: 'slack:C1', tool: '=evil', argsHash: 'ab12', outcome: 'approved', detail: { k: 'v' } },
      (t) => t.replace('U1', 'U*'),
    );
    expect(row).toBe('2026-01-02T03:04:05.000Z,approval,slack:U*,slack:C1,\'=evil,ab12,approved,"{""k"":""v""}",id1\r\n');
  });
});

describe('audit filters from the query string', () => {
  const q = (s: string) => parseAuditQuery(new URLSearchParams(s));

  it('takes known kinds, exact ids and whole UTC days (the "to" day included)', () => {
    const r = q('kind=stop&actor=%20slack:U1%20&channel=discord:9&from=2026-11-02&to=2026-11-03&page=3');
    expect(r.problems).toEqual([]);
    expect(r.filter).toEqual({ kind: 'stop', actor: 'slack:U1', channel: 'discord:9', from: Date.UTC(2026, 10, 2), to: Date.UTC(2026, 10, 4) });
    expect(r.page).toBe(3);
    expect(auditQueryString(r, 2)).toBe('?kind=stop&actor=slack%3AU1&channel=discord%3A9&from=2026-11-02&to=2026-11-03&page=2');
  });

  it('drops and names what does not parse: unknown kinds, impossible dates, huge ids, odd pages', () => {
    const r = q(`kind=${encodeURIComponent("stop' OR '1'='1")}&from=2026-02-31&to=yesterday&actor=${'x'.repeat(201)}&page=abc`);
    expect(r.filter).toEqual({});
    expect(r.problems).toHaveLength(4);
    expect(r.page).toBe(1);
    expect(q('page=-1').page).toBe(1);
    expect(q('page=2.5').page).toBe(1);
    expect(q('page=999999').page).toBe(MAX_AUDIT_PAGE);
    expect(q('page=1e9').page).toBe(MAX_AUDIT_PAGE);
    expect(q('kind=__proto__').filter).toEqual({});
  });
});
