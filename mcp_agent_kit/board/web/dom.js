// dom.js: the one way the page builds elements. Text always goes in as text (textContent, or a string
// child, which becomes a Text node): no data is ever parsed as markup, so an agent that prints <script>
// shows text. Attribute names come from the page's own code, never from data.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = String(value);
    else if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'hidden' || key === 'disabled' || key === 'checked' || key === 'open') node[key] = true;
    else node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

export const byId = (id) => document.getElementById(id);

export function say(node, text) {
  node.textContent = text || '';
}

export function show(node, visible) {
  node.hidden = !visible;
}

// "3m 12s", "1h 04m": how long since `since` (ISO text) until `until` (ISO text, or now)
export function elapsed(since, until) {
  if (!since) return '';
  const end = until ? Date.parse(until) : Date.now();
  const seconds = Math.max(0, Math.floor((end - Date.parse(since)) / 1000));
  if (!Number.isFinite(seconds)) return '';
  const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
  if (h) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m) return `${m}m ${String(s).padStart(2, '0')}s`;
  return `${s}s`;
}
