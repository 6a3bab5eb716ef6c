import type { IncomingMessage, ServerResponse } from 'node:http';
import type { App, Logger as SlackLogger, Receiver, ReceiverEvent } from '@slack/bolt';
import { HTTPModuleFunctions as http, HTTPResponseAck } from './bolt.js';
import type { Logger } from '../../src/basics/log.js';
import type { HttpRoute } from '../../src/basics/http-server.js';
import { rejectSkewedRequests } from './request-age.js';
import { verifySlackSignature } from './signature.js';
import { parse as parseQuery } from 'node:querystring';
import { requestsFirst } from '../../src/basics/requests-first.js';

/**
 * Bolt's receiver for HTTP mode without a server of its own: events, interactivity and slash
 * commands arrive at `POST /slack/events` on the bot's one HTTP server (src/basics/http-server.ts),
 * which calls `route.handle`. Each request is checked the way Bolt's HTTPReceiver checks it (age of
 * the timestamp — ours, 5 minutes either way — then signature, body size, `ssl_check`,
 * `url_verification`), and handed to the App with an ack that answers the HTTP request. Starting
 * and stopping the App starts and stops nothing here: the server belongs to the composition root.
 */
export const EVENTS_PATH = '/slack/events';

export interface EventsReceiverOptions {
  signingSecret: string;
  logger: SlackLogger;
  log: Logger;
  /** The clock request timestamps are checked against (default Date.now). */
  now?: () => number;
}

export class SlackEventsReceiver implements Receiver {
  private app: App | undefined;
  readonly route: HttpRoute;

  constructor(private readonly opts: EventsReceiverOptions) {
    this.route = {
      path: EVENTS_PATH,
      methods: ['POST'],
      handle: rejectSkewedRequests((req, res) => void this.receive(req, res), opts.log, opts.now),
    };
  }

  init(app: App): void {
    this.app = app;
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const logger = this.opts.logger;
    let buffered;
    try {
      buffered = await http.bufferIncomingMessage(req, http.defaultBodyLimit);
    } catch (err) {
      if (http.isRawBodyError(err) && (err.type === 'entity.too.large' || err.statusCode === 413)) {
        logger.warn(`slack: a request body exceeded ${err.limit} bytes`);
        http.buildNoBodyResponse(res, 413);
        return;
      }
      logger.warn(`slack: refused a request whose body could not be read: ${(err as Error).message}`);
      http.buildNoBodyResponse(res, 400);
      return;
    }
    // As Bolt's parseAndVerifyHTTPRequest, with the body decoded once and the signature checked
    // by signature.ts: Slack's `ssl_check` form carries no signature, and nothing else it might
    // carry is kept; every other request is refused unless signed.
    const text = buffered.rawBody.toString();
    const form = req.headers['content-type'] === 'application/x-www-form-urlencoded' ? parseQuery(text) : undefined;
    if (form?.ssl_check === '1') return http.buildSSLCheckResponse(res);
    try {
      verifySlackSignature(this.opts.signingSecret, { signature: req.headers['x-slack-signature'], timestamp: req.headers['x-slack-request-timestamp'] }, buffered.rawBody, (this.opts.now ?? Date.now)());
    } catch (err) {
      logger.warn(`slack: refused a request that failed the signature check: ${(err as Error).message}`);
      http.buildNoBodyResponse(res, 401);
      return;
    }
    let body: ReceiverEvent['body'];
    try {
      // As Bolt's parseHTTPRequestBody: a form's `payload` is JSON (interactivity), a form without one is a slash command.
      body = (form ? (typeof form.payload === 'string' ? JSON.parse(form.payload) : form) : JSON.parse(text)) as ReceiverEvent['body'];
    } catch (err) {
      logger.warn(`slack: malformed request body: ${(err as Error).message}`);
      http.buildNoBodyResponse(res, 400);
      return;
    }
    if (body.ssl_check === '1') return http.buildSSLCheckResponse(res);
    if (body.type === 'url_verification') return http.buildUrlVerificationResponse(res, body);

    // processBeforeResponse false: the answer goes out as soon as a listener acks. DurableApp has
    // written the body to the receipt journal before Bolt sees it, so nothing acknowledged is only
    // in memory. An unacknowledged request is answered (with a log line) after about 3 s.
    const ack = new HTTPResponseAck({ logger, processBeforeResponse: false, httpRequest: buffered, httpRequestBody: body, httpResponse: res });
    const answer = ack.bind();
    const event: ReceiverEvent = {
      body,
      // Once the answer is written, what Bolt does next (its middleware, the listeners) waits until
      // the requests already read are answered too (requests-first.ts).
      ack: async (response) => {
        await answer(response);
        await requestsFirst();
      },
      retryNum: http.extractRetryNumFromHTTPRequest(req),
      retryReason: http.extractRetryReasonFromHTTPRequest(req),
      customProperties: {},
    };
    try {
      if (!this.app) throw new Error('the Slack app is not attached to its receiver');
      await this.app.processEvent(event);
    } catch (error) {
      const acknowledged = await http.defaultProcessEventErrorHandler({ error: error as Error, logger, request: req, response: res, storedResponse: ack.storedResponse });
      if (acknowledged) ack.ack();
    }
  }
}
