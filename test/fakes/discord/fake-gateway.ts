import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  GatewayDispatchEvents,
  GatewayIntentBits,
  GatewayOpcodes,
  type GatewayIdentifyData,
  type GatewayReadyDispatchData,
  type GatewayResumeData,
  type APIUser,
  type ApplicationFlags,
} from 'discord-api-types/v10';
import { WebSocket, WebSocketServer } from 'ws';

/**
 * The fake Discord gateway: HELLO, IDENTIFY → READY + one GUILD_CREATE per guild, heartbeats
 * (ACKs can be switched off to make a zombie connection), RESUME → replay + RESUMED, and close
 * codes on demand (4014 when the Message Content intent is refused). Every dispatch is kept with
 * its sequence number so a resume can replay what the client missed.
 */

export interface GatewayOptions {
  heartbeatIntervalMs: number;
  botUser: APIUser;
  applicationId: string;
  guildCreates: () => object[];
  url: () => string;
}

interface Dispatch {
  s: number;
  t: string;
  d: unknown;
}

export class FakeGateway {
  readonly wss = new WebSocketServer({ noServer: true });
  identifies: GatewayIdentifyData[] = [];
  resumes: GatewayResumeData[] = [];
  heartbeats = 0;
  ackHeartbeats = true;
  /** When set, IDENTIFY asking for Message Content is answered with close code 4014. */
  refuseMessageContent = false;
  /** Forces the next RESUME to replay from this sequence (Discord may redeliver events). */
  replayFrom: number | null = null;

  private socket: WebSocket | null = null;
  private sessionId: string | null = null;
  private seq = 0;
  private log: Dispatch[] = [];
  private sessions = 0;

  constructor(private readonly opts: GatewayOptions) {
    this.wss.on('connection', (ws) => this.onConnection(ws));
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit('connection', ws, req));
  }

  get connected(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  get sequence(): number {
    return this.seq;
  }

  /** Sends (or, while disconnected, only records) a dispatch event. */
  dispatch(t: string, d: unknown): number {
    const s = ++this.seq;
    this.log.push({ s, t, d });
    if (this.log.length > 1000) this.log.shift();
    if (this.connected && this.sessionId) this.send({ op: GatewayOpcodes.Dispatch, t, s, d });
    return s;
  }

  /** Closes the live connection from the server side (4000 = unknown error: clients resume). */
  drop(code = 4000): void {
    this.socket?.close(code, 'fake drop');
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  private send(payload: object): void {
    this.socket?.send(JSON.stringify(payload));
  }

  private onConnection(ws: WebSocket): void {
    if (this.socket && this.socket !== ws) this.socket.terminate();
    this.socket = ws;
    ws.on('message', (raw) => this.onPayload(ws, String(raw)));
    ws.on('close', () => {
      if (this.socket === ws) this.socket = null;
    });
    ws.send(JSON.stringify({ op: GatewayOpcodes.Hello, d: { heartbeat_interval: this.opts.heartbeatIntervalMs }, s: null, t: null }));
  }

  private onPayload(ws: WebSocket, raw: string): void {
    let payload: { op: number; d: unknown };
    try {
      payload = JSON.parse(raw) as { op: number; d: unknown };
    } catch {
      ws.close(4002, 'decode error');
      return;
    }
    switch (payload.op) {
      case GatewayOpcodes.Heartbeat:
        this.heartbeats++;
        if (this.ackHeartbeats) ws.send(JSON.stringify({ op: GatewayOpcodes.HeartbeatAck }));
        return;
      case GatewayOpcodes.Identify:
        return this.onIdentify(ws, payload.d as GatewayIdentifyData);
      case GatewayOpcodes.Resume:
        return this.onResume(ws, payload.d as GatewayResumeData);
      default:
        return;
    }
  }

  private onIdentify(ws: WebSocket, d: GatewayIdentifyData): void {
    this.identifies.push(d);
    if (this.refuseMessageContent && (Number(d.intents) & GatewayIntentBits.MessageContent) !== 0) {
      ws.close(4014, 'Disallowed intent(s).');
      return;
    }
    this.sessionId = `session-${++this.sessions}`;
    const ready: GatewayReadyDispatchData = {
      v: 10,
      user: this.opts.botUser,
      guilds: this.opts.guildCreates().map((g) => ({ id: (g as { id: string }).id, unavailable: true })),
      session_id: this.sessionId,
      resume_gateway_url: this.opts.url(),
      shard: [0, 1],
      application: { id: this.opts.applicationId, flags: 0 as ApplicationFlags, flags_new: '0' },
    };
    this.dispatch(GatewayDispatchEvents.Ready, ready);
    // Without these discord.js waits (waitGuildTimeout) for guilds that never arrive.
    for (const g of this.opts.guildCreates()) this.dispatch(GatewayDispatchEvents.GuildCreate, g);
  }

  private onResume(ws: WebSocket, d: GatewayResumeData): void {
    this.resumes.push(d);
    if (d.session_id !== this.sessionId) {
      ws.send(JSON.stringify({ op: GatewayOpcodes.InvalidSession, d: false }));
      return;
    }
    const from = this.replayFrom ?? d.seq;
    this.replayFrom = null;
    for (const e of this.log.filter((x) => x.s > from && x.t !== GatewayDispatchEvents.Ready && x.t !== GatewayDispatchEvents.Resumed)) ws.send(JSON.stringify({ op: GatewayOpcodes.Dispatch, t: e.t, s: e.s, d: e.d }));
    this.dispatch(GatewayDispatchEvents.Resumed, {});
  }
}
