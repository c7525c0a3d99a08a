// wire.js: the page's one WebSocket to the board (/ws), speaking LIVE_API's envelope
// {id, type, action, payload, timestamp} (+ "csrf" on every request of a cookie session).
// Before each connection it reads GET /api/session (a 401 sends the person to /login; the CSRF token is
// fresh each time). It reconnects by itself with jittered exponential backoff (0.5 s doubling to 30 s);
// `onOpen` runs after every (re)connection, so the app resubscribes from the last seq it saw.

export class WireError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export async function fetchSession() {
  const response = await fetch('/api/session', { credentials: 'same-origin', cache: 'no-store' });
  if (response.status === 401) return null;
  if (!response.ok) throw new WireError('internal', `session: HTTP ${response.status}`);
  return response.json();
}

export class Wire {
  constructor({ onOpen, onNotify, onState }) {
    this.url = location.origin.replace(/^http/, 'ws') + '/ws';
    this.onOpen = onOpen;
    this.onNotify = onNotify;
    this.onState = onState;
    this.ws = null;
    this.csrf = null;
    this.pending = new Map();
    this.counter = 0;
    this.attempt = 0;
    this.timer = null;
  }

  async connect() {
    this.timer = null;
    this.onState('connecting');
    let session;
    try {
      session = await fetchSession();
    } catch {
      this.retry();
      return;
    }
    if (session === null) {
      location.assign('/login');
      return;
    }
    this.csrf = session.csrf || null;
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener('open', () => {
      this.attempt = 0;
      this.onState('online');
      this.onOpen(session);
    });
    ws.addEventListener('message', (event) => this.received(event.data));
    ws.addEventListener('close', () => {
      if (this.ws !== ws) return;
      this.ws = null;
      for (const waiter of this.pending.values()) waiter.reject(new WireError('offline', 'the connection dropped'));
      this.pending.clear();
      this.retry();
    });
  }

  retry() {
    if (this.timer !== null) return;
    const delay = Math.min(30000, 500 * 2 ** Math.min(this.attempt, 6)) * (0.75 + Math.random() / 2);
    this.attempt += 1;
    this.onState('offline', delay);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  request(action, payload = {}) {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new WireError('offline', 'not connected to the board; reconnecting'));
    }
    this.counter += 1;
    const id = `page-${this.counter}`;
    const frame = { id, type: 'request', action, payload, timestamp: new Date().toISOString() };
    if (this.csrf) frame.csrf = this.csrf;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      ws.send(JSON.stringify(frame));
    });
  }

  received(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (!message || typeof message !== 'object') return;
    const payload = message.payload && typeof message.payload === 'object' ? message.payload : {};
    const waiter = message.id != null ? this.pending.get(message.id) : undefined;
    if (waiter && (message.type === 'response' || message.type === 'error')) {
      this.pending.delete(message.id);
      if (message.type === 'response') waiter.resolve(payload);
      else waiter.reject(new WireError(String(payload.code || 'internal'), String(payload.message || 'refused')));
      if (payload.code === 'csrf' && this.ws) this.ws.close(4000, 'csrf: fetch a new session');
    } else if (message.type === 'notification') {
      this.onNotify(String(message.action || ''), payload);
    } else if (message.type === 'error') {
      this.onNotify('error', payload);
    }
  }
}
