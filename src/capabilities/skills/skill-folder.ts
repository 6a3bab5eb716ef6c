import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { canonicalJson } from '../../state/approvals/approval-store.js';

/**
 * One skill folder on disk: `SKILL.md` with YAML front matter (`name`, `description`) and the
 * instructions below it, plus any other files (scripts, references). Reading is confined to the
 * folder: only regular files found by walking it without following symlinks are readable, and a
 * file is opened without following a symlink put in its place later.
 */

// The YAML parser loads only when there is a skill to read (most setups have none).
const parseYaml = (text: string): unknown => (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);

export const SKILL_FILE = 'SKILL.md';
export const SKILL_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
const MAX_FILES = 200;
const MAX_DEPTH = 6;
/** Bigger files are listed but neither hashed in full nor read (a skill is instructions, not data). */
export const MAX_SKILL_FILE_BYTES = 512 * 1024;

export interface SkillFolder {
  name: string;
  description: string;
  dir: string;
  /** The text of SKILL.md after the front matter. */
  instructions: string;
  /** Regular files, relative, `/`-separated, sorted. */
  files: string[];
  /** sha256 (base64url) over every file's path and content: what a pin records. */
  hash: string;
}

export type SkillRead = { ok: true; skill: SkillFolder } | { ok: false; folder: string; problem: string };

/** Every subfolder of `root` that has a SKILL.md, read and hashed. A missing root is no skills. */
export async function readSkillFolders(root: string): Promise<SkillRead[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(root, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: SkillRead[] = [];
  for (const e of entries.filter((d) => d.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const dir = path.join(root, e.name);
    out.push(await readSkillFolder(dir).catch((err: Error): SkillRead => ({ ok: false, folder: e.name, problem: err.message })));
  }
  return out.filter((r) => r.ok || r.problem !== 'no SKILL.md');
}

export async function readSkillFolder(dir: string): Promise<SkillRead> {
  const folder = path.basename(dir);
  const files = await walk(dir);
  if (!files.includes(SKILL_FILE)) return { ok: false, folder, problem: 'no SKILL.md' };
  const text = (await readConfined(dir, SKILL_FILE)).toString('utf8');
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!m) return { ok: false, folder, problem: 'SKILL.md does not start with YAML front matter (--- name: … description: … ---)' };
  let front: unknown;
  try {
    front = parseYaml(m[1]!);
  } catch (err) {
    return { ok: false, folder, problem: `its front matter is not valid YAML: ${(err as Error).message.split('\n')[0]}` };
  }
  const { name, description } = (front ?? {}) as { name?: unknown; description?: unknown };
  if (typeof name !== 'string' || !SKILL_NAME.test(name)) return { ok: false, folder, problem: 'front matter name must be lowercase letters, digits and - (at most 64)' };
  if (name !== folder) return { ok: false, folder, problem: `front matter name "${name}" must equal the folder name` };
  if (typeof description !== 'string' || description.trim() === '' || description.length > 1024) return { ok: false, folder, problem: 'front matter description must be text of 1-1024 characters' };
  const hash = await hashFolder(dir, files);
  return { ok: true, skill: { name, description: description.trim(), dir, instructions: m[2]!.trim(), files, hash } };
}

/** The folder's regular files, not following symlinks, bounded in count and depth. */
async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (rel: string, depth: number) => {
    if (depth > MAX_DEPTH) return;
    const entries = await readdir(path.join(dir, rel), { withFileTypes: true });
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (out.length >= MAX_FILES) return;
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await visit(child, depth + 1);
      else if (e.isFile()) out.push(child);
    }
  };
  await visit('', 0);
  return out.sort();
}

async function hashFolder(dir: string, files: string[]): Promise<string> {
  const parts: Array<[string, string]> = [];
  for (const f of files) {
    const data = await readConfined(dir, f).catch((err: Error) => Buffer.from(`unreadable: ${err.message}`));
    parts.push([f, createHash('sha256').update(data).digest('hex')]);
  }
  return createHash('sha256').update(canonicalJson(parts)).digest('base64url');
}

/** Re-reads the folder and says whether it still hashes to `hash`. */
export async function currentHash(dir: string): Promise<string> {
  return hashFolder(dir, await walk(dir));
}

/**
 * One file of the folder, by a relative path from its listing. Refused: absolute paths, `..`,
 * anything not a regular file inside the folder (a symlink, even one swapped in after listing).
 */
export async function readConfined(dir: string, rel: string): Promise<Buffer> {
  if (rel.startsWith('/') || rel.split(/[\\/]/).some((seg) => seg === '..' || seg === '')) throw new Error(`"${rel}" is not a path inside the skill folder`);
  const full = path.join(dir, rel);
  const [root, real] = await Promise.all([realpath(dir), realpath(full)]);
  if (!real.startsWith(root + path.sep)) throw new Error(`"${rel}" leads outside the skill folder`);
  const st = await lstat(full);
  if (!st.isFile()) throw new Error(`"${rel}" is not a regular file`);
  if (st.size > MAX_SKILL_FILE_BYTES) throw new Error(`"${rel}" is larger than ${MAX_SKILL_FILE_BYTES / 1024} KB`);
  const handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
