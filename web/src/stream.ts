//! One WebSocket to `/ws` for the whole page. Subscriptions are kept by name and sent again
//! after every reconnect, so each starts over with a fresh snapshot; a subscription can also be
//! restarted on its own (after a gap). Reconnects back off from 0.5 s to 10 s. This module
//! knows the protocol, not the page.

export type Message = Record<string, unknown> & { event: string; id?: string; channel?: string };
export type Handler = (message: Message) => void;

interface Subscription { request: Record<string, unknown>; handler: Handler }

export type StreamStatus = "connecting" | "live" | "reconnecting";

const MAX_BACKOFF_MS = 10_000;

export class Stream {
  private socket: WebSocket | null = null;
  private subscriptions = new Map<string, Subscription>();
  private backoffMs = 500;
  private counter = 0;

  constructor(
    private readonly url: string,
    private readonly onStatus: (status: StreamStatus) => void,
    private readonly onReconnected: () => void,
    private readonly onError: (message: Message) => void,
  ) {}

  start(): void {
    this.connect(false);
  }

  private connect(again: boolean): void {
    this.onStatus(again ? "reconnecting" : "connecting");
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.onopen = () => {
      this.backoffMs = 500;
      this.onStatus("live");
      for (const [id, subscription] of this.subscriptions) this.send({ op: "subscribe", id, ...subscription.request });
      if (again) this.onReconnected();
    };
    socket.onmessage = (event) => {
      let message: Message;
      try {
        message = JSON.parse(String(event.data)) as Message;
      } catch {
        return;
      }
      const subscription = message.id !== undefined ? this.subscriptions.get(String(message.id)) : undefined;
      if (message.event === "error") {
        // A subscription that ended (UNAVAILABLE) starts over; SLOW_CONSUMER closes the socket.
        if (subscription && message.code === "UNAVAILABLE") this.restart(String(message.id));
        else this.onError(message);
        return;
      }
      subscription?.handler(message);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.onStatus("reconnecting");
      const delay = this.backoffMs;
      this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
      setTimeout(() => this.connect(true), delay);
    };
  }

  private send(request: Record<string, unknown>): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(request));
  }

  /** Subscribes; returns the subscription's id. */
  subscribe(request: Record<string, unknown>, handler: Handler): string {
    const id = `s${++this.counter}`;
    this.subscriptions.set(id, { request, handler });
    this.send({ op: "subscribe", id, ...request });
    return id;
  }

  unsubscribe(id: string): void {
    const subscription = this.subscriptions.get(id);
    if (!subscription) return;
    this.subscriptions.delete(id);
    const { depth: _depth, ...name } = subscription.request;
    this.send({ op: "unsubscribe", id, ...name });
  }

  /** Starts a subscription over (a gap or a bad checksum): a new id, so stale messages drop. */
  restart(id: string): string | null {
    const subscription = this.subscriptions.get(id);
    if (!subscription) return null;
    this.unsubscribe(id);
    return this.subscribe(subscription.request, subscription.handler);
  }
}
