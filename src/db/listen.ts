import pg from 'pg';

/** What a {@link listen} connection tells its owner. */
export interface ListenHandlers {
  /** A notification on the channel (its payload). */
  onNotify: (payload: string) => void;
  /** LISTEN is in effect: every later commit's notification will arrive. */
  onUp: () => void;
  /** The connection was lost (or could not be opened): notifications may be missed until the next `onUp`. */
  onDown: (err: unknown) => void;
}

export interface Listening {
  close(): Promise<void>;
}

const MIN_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;

/**
 * LISTEN on `channel` over a connection of its own (not a pooled one: a pool would hand it to
 * queries), reconnecting with backoff after a failure. Between `onDown` and the next `onUp`
 * notifications are lost: owners caching on the strength of them must stop trusting the cache
 * for that time (see src/http/key-cache.ts).
 */
export function listen(url: string, channel: string, handlers: ListenHandlers): Listening {
  let closed = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let retryMs = MIN_RETRY_MS;

  const lost = (c: pg.Client, err: unknown) => {
    if (client !== c) return; // already handled
    client = undefined;
    c.removeAllListeners('notification');
    c.end().catch(() => undefined);
    handlers.onDown(err);
    if (!closed) timer = setTimeout(open, retryMs);
    retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
  };

  function open(): void {
    timer = undefined;
    const c = new pg.Client({ connectionString: url, application_name: 'mailplatform-listen' });
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('connection ended')));
    c.on('notification', (msg) => {
      if (msg.channel === channel) handlers.onNotify(msg.payload ?? '');
    });
    c.connect()
      .then(() => c.query(`LISTEN ${pg.escapeIdentifier(channel)}`))
      .then(() => {
        if (client !== c) return;
        retryMs = MIN_RETRY_MS;
        handlers.onUp();
      })
      .catch((err: unknown) => lost(c, err));
  }

  open();
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = undefined;
      if (c) await c.end().catch(() => undefined);
    },
  };
}
