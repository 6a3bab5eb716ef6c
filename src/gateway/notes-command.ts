import type { CommandInvocation, CommandReply } from '../basics/ports.js';
import type { Speaker } from '../basics/types.js';
import { MAX_CHANNEL_NOTE_CHARS, type ChannelNotes } from '../state/notes/channel-notes.js';

/**
 * `/hermes notes` (anyone: shows them), `/hermes notes set <text>` and `/hermes notes clear`
 * (admins, and whoever else `mayEdit` allows, e.g. the channel policy's approvers). The notes are
 * the channel's, so a command in a thread reads and sets its channel's.
 */
export interface NotesCommandDeps {
  notes?: ChannelNotes;
  /** Whether this speaker may change this channel's notes. */
  mayEdit(speaker: Speaker, cmd: CommandInvocation): boolean | Promise<boolean>;
}

const reply = (text: string): CommandReply => ({ kind: 'private', text });

export async function notesCommand(arg: string, cmd: CommandInvocation, prefix: string, deps: NotesCommandDeps): Promise<CommandReply> {
  if (!deps.notes) return reply('Channel notes are not available here.');
  const m = /^(\S+)(?:\s+([\s\S]*))?$/.exec(arg.trim());
  const verb = (m?.[1] ?? '').toLowerCase();
  const rest = (m?.[2] ?? '').trim();
  if (verb === '') {
    const note = await deps.notes.get(cmd.conversation);
    if (!note) return reply(`This channel has no notes. Admins set them with \`${prefix}notes set <text>\`; I read them on every request here.`);
    return reply(`Notes of this channel (set ${new Date(note.setAt).toISOString().slice(0, 16)}Z; I read them on every request here):\n${note.text}`);
  }
  if (verb !== 'set' && verb !== 'clear') return reply(`Use \`${prefix}notes\` to see this channel's notes, \`${prefix}notes set <text>\` or \`${prefix}notes clear\` to change them.`);
  if (!(await deps.mayEdit(cmd.speaker, cmd))) return reply("Only admins and this channel's approvers can change its notes.");
  if (verb === 'clear') return reply((await deps.notes.clear(cmd.conversation)) ? 'Cleared the notes of this channel.' : 'This channel had no notes.');
  if (!rest) return reply(`Say what the notes should be: \`${prefix}notes set <text>\` (this replaces the current notes).`);
  if (rest.length > MAX_CHANNEL_NOTE_CHARS) return reply(`The notes are ${rest.length} characters; the limit is ${MAX_CHANNEL_NOTE_CHARS}. Keep only what matters on every request here.`);
  await deps.notes.set(cmd.conversation, rest, cmd.speaker);
  return reply(`Saved the notes of this channel (${rest.length} characters). I will read them on every request here.`);
}
