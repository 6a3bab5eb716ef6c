import type { REST } from 'discord.js';
import {
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ApplicationIntegrationType,
  InteractionContextType,
  Routes,
  type APIApplicationCommand,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord-api-types/v10';
import type { Logger } from '../../src/basics/log.js';

/**
 * `/hermes <text>`: one free-text option rather than Discord subcommands, because the shared
 * registry parses the text (`help`, `forget f1`, or a task) the same way on every platform, and a
 * task is the common case: one option keeps it a single field to type into.
 */
export const HERMES_COMMAND: RESTPostAPIChatInputApplicationCommandsJSONBody = {
  name: 'hermes',
  type: ApplicationCommandType.ChatInput,
  description: 'Give Hermes a task, or manage your session (help, new, stop, memory, forget, status)',
  options: [
    {
      type: ApplicationCommandOptionType.String,
      name: 'text',
      description: 'A task, or one of: help, new, stop, memory, forget <id|all>, status',
      required: true,
      max_length: 4000,
    },
  ],
  integration_types: [ApplicationIntegrationType.GuildInstall],
  contexts: [InteractionContextType.Guild, InteractionContextType.BotDM],
};

export type RegistrationResult = 'created' | 'updated' | 'unchanged';

/**
 * Registers `/hermes` on the guild (instant) or globally. Idempotent: reads what is registered and
 * writes only when it differs. The write is a bulk overwrite, so commands this app no longer
 * defines disappear with it. In guild mode a global `/hermes` left from an earlier global run is
 * deleted, or users would see the command twice.
 */
export async function registerCommands(rest: REST, applicationId: string, guildId: string | undefined, log: Logger): Promise<RegistrationResult> {
  const route = guildId ? Routes.applicationGuildCommands(applicationId, guildId) : Routes.applicationCommands(applicationId);
  const existing = (await rest.get(route)) as APIApplicationCommand[];
  let result: RegistrationResult = 'unchanged';
  if (!(existing.length === 1 && sameCommand(existing[0]!, HERMES_COMMAND))) {
    await rest.put(route, { body: [HERMES_COMMAND] });
    result = existing.some((c) => c.name === HERMES_COMMAND.name) ? 'updated' : 'created';
  }
  if (guildId) {
    const globals = (await rest.get(Routes.applicationCommands(applicationId))) as APIApplicationCommand[];
    for (const stale of globals.filter((c) => c.name === HERMES_COMMAND.name)) {
      await rest.delete(Routes.applicationCommand(applicationId, stale.id));
      log.info({ commandId: stale.id }, 'discord: removed the global /hermes; it is registered on DISCORD_GUILD_ID now');
    }
  }
  log.info({ scope: guildId ? 'guild' : 'global', result }, 'discord: /hermes registered');
  return result;
}

/** Compares only what we define; Discord adds ids, versions and defaults to what it returns. */
export function sameCommand(registered: APIApplicationCommand, wanted: RESTPostAPIChatInputApplicationCommandsJSONBody): boolean {
  return canonical(registered) === canonical(wanted);
}

type CommandShape = Pick<APIApplicationCommand, 'name' | 'description'> & {
  type?: ApplicationCommandType;
  options?: readonly object[];
  integration_types?: readonly number[] | null;
  contexts?: readonly number[] | null;
};

function canonical(c: CommandShape): string {
  const options = (c.options ?? []).map((o) => {
    const opt = o as { type: number; name: string; description: string; required?: boolean; max_length?: number };
    return [opt.type, opt.name, opt.description, opt.required ?? false, opt.max_length ?? null];
  });
  const sorted = (xs: readonly number[] | null | undefined) => [...(xs ?? [])].sort((a, b) => a - b);
  return JSON.stringify([c.type ?? ApplicationCommandType.ChatInput, c.name, c.description, options, sorted(c.integration_types), sorted(c.contexts)]);
}
