import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPins } from '../../src/capabilities/mcp/pin-watch.js';

/** The pins read on a reload: an empty file (a write caught half-way) never reads as "nothing pinned". */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-pins-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readPins', () => {
  it('reads the pins of servers and skills', async () => {
    const file = path.join(dir, 'a.yaml');
    const [a, b] = ['a'.repeat(43), 'b'.repeat(43)];
    await writeFile(file, `mcp_servers:\n  fake:\n    command: node\n    pin: {echo: ${a}}\nskills:\n  notes:\n    pin: ${b}\n`);
    const pins = readPins(file);
    expect([...pins.servers]).toEqual([['fake', { echo: a }]]);
    expect(pins.skills).toEqual({ notes: b });
  });

  it('refuses an empty file instead of reading it as no pins', async () => {
    const file = path.join(dir, 'b.yaml');
    await writeFile(file, '  \n');
    expect(() => readPins(file)).toThrow('the file is empty');
  });
});
