import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { CaseFileError, loadCases, parseCaseFile, selectCases, withWebOrigin } from '../../src/operations/eval/case-schema.js';

const minimal = `
name: ok-case
messages: [hello]
expect:
  max_steps: 1
`;

function problems(text: string): string[] {
  try {
    parseCaseFile(text, 'evals/x.yaml');
  } catch (err) {
    if (err instanceof CaseFileError) return err.problems;
    throw err;
  }
  return [];
}

describe('case files', () => {
  it('fills defaults for a minimal case', () => {
    const [c] = parseCaseFile(minimal, 'x.yaml');
    expect(c).toMatchObject({ name: 'ok-case', tags: [], conversation: 'dm', approvals: [], environment: { pages: {} }, messages: ['hello'] });
  });

  it('names the file, the case and the field of every problem', () => {
    const p = problems(`
- name: Bad Name
  messages: []
  expect: {}
- name: second
  messages: [hi]
  environment: { clock: yesterday, pages: { "no-slash": x } }
  expect: { answer: { any: [] }, surprise: true }
  approvals: [maybe]
`);
    expect(p).toContainEqual(expect.stringMatching(/^evals\/x\.yaml: case "Bad Name": name: use lowercase letters/));
    expect(p).toContainEqual(expect.stringMatching(/case "Bad Name": messages: .*1/));
    expect(p).toContainEqual(expect.stringMatching(/case "second": environment\.clock: must be an ISO 8601 date-time/));
    expect(p).toContainEqual(expect.stringMatching(/case "second": environment\.pages\.no-slash: page paths start with \//));
    expect(p).toContainEqual(expect.stringMatching(/case "second": expect: .*surprise/));
    expect(p).toContainEqual(expect.stringMatching(/case "second": expect\.answer\.any:/));
    expect(p).toContainEqual(expect.stringMatching(/case "second": approvals\.0:/));
  });

  it('reports broken YAML in one line', () => {
    expect(problems('name: [unclosed')).toEqual([expect.stringMatching(/^evals\/x\.yaml: not valid YAML: /)]);
  });

  it('loads a folder, rejects duplicate names across files, and filters by name and tag', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-cases-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    await writeFile(path.join(dir, 'a.yaml'), `${minimal}tags: [x]\n`);
    await writeFile(path.join(dir, 'b.yml'), '- name: other\n  tags: [y]\n  messages: [hi]\n  expect: {}\n');
    await writeFile(path.join(dir, 'notes.txt'), 'not a case');
    const cases = await loadCases(dir);
    expect(cases.map((c) => c.name)).toEqual(['ok-case', 'other']);
    expect(selectCases(cases, { tags: ['y'] }).map((c) => c.name)).toEqual(['other']);
    expect(selectCases(cases, { names: ['ok-case'], tags: ['y'] })).toEqual([]);
    expect(selectCases(cases, {})).toHaveLength(2);
    await writeFile(path.join(dir, 'c.yaml'), minimal);
    await expect(loadCases(dir)).rejects.toThrow(/two cases are named "ok-case"/);
    await expect(loadCases(path.join(dir, 'missing'))).rejects.toThrow(/cannot read the case folder \(ENOENT\)/);
  });

  it('fills {{web}} in every string, deep', () => {
    const [c] = parseCaseFile(`
name: w
messages: ["read {{web}}/a"]
expect: { tools_called: [{ name: fetch_url, args: { url: "{{web}}/a" } }] }
script: [{ tool: fetch_url, args: { url: "{{web}}/a" } }]
`, 'w.yaml');
    const filled = withWebOrigin(c!, 'http://127.0.0.1:9');
    expect(filled.messages).toEqual(['read http://127.0.0.1:9/a']);
    expect(filled.expect.tools_called?.[0]?.args).toEqual({ url: 'http://127.0.0.1:9/a' });
    expect(filled.script).toEqual([{ tool: 'fetch_url', args: { url: 'http://127.0.0.1:9/a' } }]);
    expect(c!.messages).toEqual(['read {{web}}/a']);
  });
});
