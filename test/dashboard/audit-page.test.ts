import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../../src/state/store/database.js';
import { createAuditLog } from '../../src/state/audit/audit-log.js';
import { serveDashboard, TOKEN, type Served } from './dashboard-helper.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function setup(rows: number): Promise<Served> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-audit-page-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const database = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
  cleanups.push(() => database.close());
  let now = Date.UTC(2026, 10, 1);
  const audit = createAuditLog({ database, clock: { now: () => now, setTimer: () => () => undefined }, log: pino({ level: 'silent' }) });
  // One statement for the lot: the table as the bot would have it after a busy month.
  await database.db
    .insertInto('hermes_audit')
    .values(Array.from({ length: rows }, (_, i) => ({ id: `${String(i).padStart(8, '0')}`, at: now + i * 1_000, kind: 'limit_refused', actor: `slack:U${i % 7}`, channel: 'slack:C1', tool: null, args_hash: null, outcome: 'rate_limit', detail: '{}' })))
    .execute();
  now += rows * 1_000 + 1;
  const served = await serveDashboard({ tracesDir: path.join(dir, 'traces'), evalsDir: path.join(dir, 'evals'), audit, now: () => now });
  cleanups.push(() => served.close());
  return served;
}

describe('audit CSV download', () => {
  it('holds every filtered row across many queries, newest first, each once', async () => {
    const served = await setup(2_345);
    const res = await served.get('/dashboard/audit.csv', { authorization: `Bearer ${TOKEN}` });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="hermes-audit-2026-11-01\.csv"$/);
    const lines = (await res.text()).split('\r\n').slice(1, -1);
    expect(lines).toHaveLength(2_345);
    const ids = lines.map((l) => l.split(',').at(-1));
    expect(new Set(ids).size).toBe(2_345);
    expect(ids[0]).toBe('00002344');
    expect(ids.at(-1)).toBe('00000000');
    const one = await served.get('/dashboard/audit.csv?actor=slack%3AU3', { authorization: `Bearer ${TOKEN}` });
    const mine = (await one.text()).split('\r\n').slice(1, -1);
    expect(mine).toHaveLength(335);
    expect(mine.every((l) => l.includes(',slack:U3,'))).toBe(true);
  });

  it('answers nothing without the token, a wrong token or a forged cookie', async () => {
    const served = await setup(3);
    for (const headers of <Array<Record<string, string>>>[{}, { authorization: 'Bearer wrong-token-wrong-token' }, { cookie: 'hermes_dashboard=forged' }]) {
      for (const p of ['/dashboard/audit', '/dashboard/audit.csv', '/dashboard/audit.csv?kind=limit_refused']) {
        const res = await served.get(p, headers);
        expect([303, 401]).toContain(res.status);
        expect(await res.text()).not.toContain('slack:U');
      }
    }
  });
});
