/**
 * Outbound HTTP for tools, with the network rules applied (see DESIGN.md "network tools").
 * Implemented in safe-fetch.ts; tools only see this interface through their context.
 */
export interface NetRequest {
  url: string;
  method?: 'GET' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Cap on the (decompressed) body; the rest is cut and `truncated` set. */
  maxBytes?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Allowed response content types (prefix match, e.g. "text/"); others are refused. */
  acceptTypes?: string[];
}

export interface NetResponse {
  status: number;
  /** The URL after redirects. */
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  truncated: boolean;
}

/** Why a request was not made. `message` is written for the model and always contains "refused". */
export class NetRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NetRefusedError';
  }
}

export interface NetClient {
  /**
   * Redirects are followed (each hop checked) only for requests without a body; a request with a
   * body that gets a redirect fails with the redirect target named, and goes nowhere else.
   */
  request(req: NetRequest): Promise<NetResponse>;
  /** Applies the network rules to a URL (resolving its name) without sending anything; throws NetRefusedError. */
  check(url: string, signal?: AbortSignal): Promise<void>;
}
