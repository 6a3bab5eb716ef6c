import type { Config } from '../../settings/config.js';
import type { Logger } from '../../basics/log.js';
import type { ToolSpec } from '../../runtime/provider/provider.js';
import { inputJsonSchema, toToolSpec, type ToolSpecOptions } from './json-schema.js';
import type { AnyTool, ToolEffect } from './tool-api.js';
import { toolAllowed, type ChannelPolicy } from '../../settings/channel-policies.js';

/** What the deployment says about one tool, merged with the tool's own defaults. */
export interface EffectiveToolSettings {
  enabled: boolean;
  /** Operator's value first, then the tool's; undefined → the executor's default. */
  timeoutMs?: number;
  maxResultChars?: number;
  /** The operator's override; undefined → the tool decides. */
  needsApproval?: boolean;
  /** The operator's override of the tool's effect; undefined → the tool's own declaration. */
  effect?: ToolEffect;
  /** `tools.<name>.settings`, handed to `isAvailable` and to the tool as ctx.settings. */
  settings: Record<string, unknown>;
}

export interface ToolView {
  isAdmin: boolean;
  /** The conversation can be read (chat platforms); tools that need it are hidden otherwise. */
  hasConversationHistory?: boolean;
  /** Only these tools, whatever else is visible (a sub-agent's profile). */
  only?: ReadonlySet<string>;
  /** The model is shown images now; tools that need it are hidden otherwise. */
  vision?: boolean;
  /** The channel policy's tool rules where the turn runs (absent: no policy). */
  rules?: ChannelPolicy['tools'];
}

/**
 * The tools the agent knows, and which of them a given speaker may see right now. Visibility is
 * computed on every call (never cached), so a tool registered while the bot runs, or one whose
 * backend appears, is offered at the next model call.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, AnyTool>();
  private readonly specCache = new WeakMap<AnyTool, { strict?: ToolSpec; plain?: ToolSpec }>();

  /** The last reason logged per tool, so a check that keeps failing the same way is logged once. */
  private readonly availabilityErrors = new Map<string, string>();

  constructor(
    private readonly toolsConfig: Config['tools'] = {},
    private readonly log?: Pick<Logger, 'warn' | 'info'>,
  ) {}

  /** Adds a tool, replacing one of the same name. Throws if its input is not a z.object. */
  register(tool: AnyTool): void {
    inputJsonSchema(tool);
    this.tools.set(tool.name, tool);
  }

  unregister(name: string): void {
    this.tools.delete(name);
  }

  get(name: string): AnyTool | undefined {
    return this.tools.get(name);
  }

  /** Whether calls of this tool are private to the user who made them (see ToolDefinition.private). */
  isPrivate(name: string): boolean {
    return this.tools.get(name)?.private === true;
  }

  /** Every registered name, in registration order, visible or not. */
  names(): string[] {
    return [...this.tools.keys()];
  }

  settingsFor(name: string): EffectiveToolSettings {
    const configured = this.toolsConfig[name] ?? {};
    const tool = this.tools.get(name);
    return {
      enabled: configured.enabled ?? true,
      timeoutMs: configured.timeoutMs ?? tool?.timeoutMs,
      maxResultChars: configured.maxResultChars ?? tool?.maxResultChars,
      needsApproval: configured.needsApproval,
      effect: configured.effect,
      settings: { ...(configured.settings ?? {}) },
    };
  }

  /** Whether this speaker may be offered (and may call) the tool right now. */
  isVisible(name: string, view: ToolView): boolean {
    const tool = this.tools.get(name);
    if (!tool) return false;
    if (view.only && !view.only.has(name)) return false;
    if (view.rules && !toolAllowed(view.rules, name)) return false;
    const settings = this.settingsFor(name);
    if (!settings.enabled) return false;
    if (tool.category === 'admin' && !view.isAdmin) return false;
    if (tool.needsConversationHistory && !view.hasConversationHistory) return false;
    if (tool.needsVision && !view.vision) return false;
    if (!tool.isAvailable) return true;
    try {
      const available = tool.isAvailable(settings.settings);
      if (this.availabilityErrors.delete(name)) this.log?.info({ tool: name }, 'tool availability check works again');
      return available;
    } catch (err) {
      // A broken check hides the tool rather than failing the whole turn, but never silently.
      const reason = err instanceof Error ? err.message : String(err);
      if (this.availabilityErrors.get(name) !== reason) {
        this.availabilityErrors.set(name, reason);
        this.log?.warn({ tool: name, err: reason }, 'tool hidden: its availability check threw');
      }
      return false;
    }
  }

  /** A registered tool the channel policy denies here: refused with that reason, not as unknown. */
  deniedHere(name: string, view: ToolView): boolean {
    return this.tools.has(name) && view.rules !== undefined && !toolAllowed(view.rules, name);
  }

  /** The visible tools, in registration order. */
  visible(view: ToolView): AnyTool[] {
    return [...this.tools.values()].filter((t) => this.isVisible(t.name, view));
  }

  /** The tool list for one model call. */
  specsFor(view: ToolView, options: ToolSpecOptions = {}): ToolSpec[] {
    const key = options.strict ? 'strict' : 'plain';
    return this.visible(view).map((t) => {
      // Which tools are visible is decided on every call; a tool's spec only changes with the tool
      // object, so it is derived from zod once per tool (and stays the same object for counting).
      let specs = this.specCache.get(t);
      if (!specs) this.specCache.set(t, (specs = {}));
      return (specs[key] ??= toToolSpec(t, options));
    });
  }

  /** Names configured under `tools:` that no registered tool has (likely typos, worth a warning). */
  unknownConfiguredTools(): string[] {
    return Object.keys(this.toolsConfig).filter((name) => !this.tools.has(name));
  }
}
