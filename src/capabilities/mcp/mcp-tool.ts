import * as z from 'zod';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { defineTool, type AnyTool, type ToolResult } from '../toolkit/tool-api.js';
import type { McpServerConfig } from '../../settings/mcp-servers.js';
import { mcpToolName } from './tool-names.js';
import { isRecord } from '../../basics/values.js';

/**
 * One MCP tool as one of ours. What the annotations decide (the MCP defaults are the cautious
 * ones: a tool is destructive and open-world unless it says otherwise):
 * - approval: `readOnlyHint: true` runs without a prompt; anything else asks a person, unless the
 *   operator's `approval: {<tool>: never|always}` says otherwise;
 * - effect: a tool that is not read-only is outward, so once the turn has read outside text even
 *   an `approval: never` tool asks first;
 * - outside text: a result of a tool whose `openWorldHint` is not `false` is wrapped as untrusted
 *   data naming the server and taints the turn.
 * Annotations are hints from the server; they are trusted only because the operator chose the
 * server and (with a pin) froze what it says about itself.
 */

/** A description longer than this is cut: it is sent on every model call. */
const MAX_DESCRIPTION = 1024;

export type CallMcpTool = (tool: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<CallToolResult>;

export function mcpTool(server: McpServerConfig, tool: Tool, call: CallMcpTool): AnyTool {
  const readOnly = tool.annotations?.readOnlyHint === true;
  const override = server.approval[tool.name];
  const openWorld = tool.annotations?.openWorldHint !== false;
  const source = `MCP server ${server.name}, tool ${tool.name}`;
  return defineTool({
    name: mcpToolName(server.name, tool.name),
    description: describe(server.name, tool),
    // Any object passes here; the server validates its own arguments and says what is wrong.
    input: z.looseObject({}),
    parameters: objectSchema(tool.inputSchema),
    needsApproval: override === 'always' ? true : override === 'never' ? false : !readOnly,
    effect: readOnly ? 'none' : 'outward',
    sideEffects: !readOnly,
    timeoutMs: server.timeoutMs,
    maxResultChars: 8000,
    async run(args, ctx): Promise<ToolResult> {
      const result = await call(tool.name, args as Record<string, unknown>, ctx.signal);
      return {
        summary: resultText(result),
        raw: { mcpServer: server.name, tool: tool.name, result },
        ...(openWorld && { outsideSource: source }),
        ...(result.isError === true && { failed: true }),
      };
    },
  });
}

function describe(server: string, tool: Tool): string {
  const own = (tool.description ?? tool.title ?? tool.annotations?.title ?? '').trim();
  const text = `[MCP server ${server}] ${own || `the ${tool.name} tool`}`;
  return text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION - 1)}…` : text;
}

/** The server's input schema, as an object schema the model APIs accept. */
function objectSchema(schema: Tool['inputSchema']): Record<string, unknown> {
  const out: Record<string, unknown> = { ...schema, type: 'object' };
  if (!isRecord(out.properties)) out.properties = {};
  delete out.$schema;
  return out;
}

/** The model's text for a result: text parts as they are, other parts described, structured content as JSON. */
export function resultText(result: CallToolResult): string {
  const parts: string[] = [];
  for (const c of result.content ?? []) {
    switch (c.type) {
      case 'text':
        parts.push(c.text);
        break;
      case 'image':
        parts.push(`[image: ${c.mimeType}, about ${approxBytes(c.data)} bytes, not shown]`);
        break;
      case 'audio':
        parts.push(`[audio: ${c.mimeType}, about ${approxBytes(c.data)} bytes, not played]`);
        break;
      case 'resource_link':
        parts.push(`[resource link: ${c.uri}${c.name ? ` (${c.name})` : ''}${c.mimeType ? `, ${c.mimeType}` : ''}]`);
        break;
      case 'resource': {
        const r = c.resource;
        if ('text' in r && typeof r.text === 'string') parts.push(`[resource ${r.uri}${r.mimeType ? `, ${r.mimeType}` : ''}]\n${r.text}`);
        else parts.push(`[resource ${r.uri}${r.mimeType ? `, ${r.mimeType}` : ''}: binary, about ${approxBytes(String((r as { blob?: unknown }).blob ?? ''))} bytes, not shown]`);
        break;
      }
      default:
        parts.push(`[${(c as { type: string }).type} content, not shown]`);
    }
  }
  if (result.structuredContent !== undefined) parts.push(`Structured result (JSON):\n${JSON.stringify(result.structuredContent)}`);
  return parts.join('\n');
}

/** Size of base64 data without decoding it. */
function approxBytes(base64: string): number {
  return Math.floor((base64.length * 3) / 4);
}
