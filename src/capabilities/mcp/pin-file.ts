import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parseDocument } from 'yaml';

/**
 * Writes pins into the config file, keeping everything else as the operator wrote it: YAML through
 * the yaml package's Document API (comments, order and quoting stay), JSON re-indented. The new
 * text goes to a temporary file renamed over the old one, so the bot's watcher never reads half a file.
 */
export function writePins(file: string, edits: Array<{ path: string[]; value: unknown }>): void {
  const text = readFileSync(file, 'utf8');
  let next: string;
  if (file.endsWith('.json')) {
    const data = JSON.parse(text) as Record<string, unknown>;
    for (const e of edits) setIn(data, e.path, e.value);
    next = `${JSON.stringify(data, null, 2)}\n`;
  } else {
    const doc = parseDocument(text);
    if (doc.errors.length) throw new Error(`${file} is not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
    for (const e of edits) doc.setIn(e.path, doc.createNode(e.value));
    next = doc.toString();
  }
  const tmp = `${file}.pin-${process.pid}.tmp`;
  writeFileSync(tmp, next);
  renameSync(tmp, file);
}

function setIn(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const child = node[key];
    if (typeof child !== 'object' || child === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}
