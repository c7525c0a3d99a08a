// transcript.js: a task's live transcript and its diffs, built from task events (LIVE_API's task.<kind>
// notifications, or the same events replayed after a reconnection). Agent text is appended as Text nodes;
// thoughts are folded in <details>; the plan is a checklist, updated in place within a turn; a tool call
// is one block updated by its toolCallId (status, and its diffs). Nothing here parses markup.
import { el } from './dom.js';

const MAX_DIFF_LINES = 4000;
const PLAN_MARK = { completed: 'done', in_progress: 'in progress', pending: 'to do' };

function lineClass(line) {
  if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ')) return 'file';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  if (line.startsWith('@@')) return 'hunk';
  return '';
}

// a <pre> of diff lines, each a span coloured by its kind (and marked by its +/- for those who cannot see colour)
export function diffBlock(lines, label) {
  const pre = el('pre', { class: 'patch', tabindex: '0', 'aria-label': label });
  const shown = lines.slice(0, MAX_DIFF_LINES);
  for (const line of shown) pre.append(el('span', { class: lineClass(line), text: line }));
  if (lines.length > shown.length) pre.append(el('span', { class: 'hunk', text: `… ${lines.length - shown.length} more lines` }));
  return pre;
}

// an ACP diff content item {path, oldText, newText} as unified-looking lines (common head and tail trimmed)
function textDiff(item) {
  const before = item.oldText == null ? [] : String(item.oldText).split('\n');
  const after = String(item.newText ?? '').split('\n');
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head += 1;
  let tail = 0;
  while (tail < before.length - head && tail < after.length - head
         && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail += 1;
  const name = String(item.path ?? '');
  return [item.oldText == null ? `new file ${name}` : `--- ${name}`, `@@ line ${head + 1} @@`,
    ...before.slice(head, before.length - tail).map((line) => '-' + line),
    ...after.slice(head, after.length - tail).map((line) => '+' + line)];
}

// the workspace diff (task.diff: {files: [{path, status, added, removed, binary}], patch}) per file
export function renderDiff(root, diff) {
  root.replaceChildren();
  const files = Array.isArray(diff.files) ? diff.files : [];
  if (!files.length) {
    root.append(el('p', { class: 'hint', text: 'No changes in the workspace.' }));
    return;
  }
  const patches = new Map();
  let current = null;
  for (const line of String(diff.patch || '').split('\n')) {
    const start = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
    if (start) {
      current = [];
      patches.set(start[2], current);
    }
    if (current) current.push(line);
  }
  for (const file of files) {
    const path = String(file.path ?? '');
    const counts = file.binary ? 'binary' : `+${file.added ?? 0} −${file.removed ?? 0}`;
    const details = el('details', { class: 'file', open: true, 'data-testid': 'diff-file', dataset: { path } },
      el('summary', {}, el('code', { text: path }), ` ${file.status ?? ''} (${counts})`));
    details.append(diffBlock(patches.get(path) || [], `changes to ${path}`));
    root.append(details);
  }
}

export class Transcript {
  constructor(root) {
    this.root = root;
    this.reset();
  }

  reset() {
    this.root.replaceChildren();
    this.message = null;
    this.thought = null;
    this.plan = null;
    this.tools = new Map();
  }

  // one task event: kind (message, thought, plan, tool_call, ...) and its fields
  add(kind, data) {
    if (kind !== 'message') this.message = null;
    if (kind !== 'thought') this.thought = null;
    const render = this[`on_${kind}`];
    if (typeof render === 'function') render.call(this, data);
    else this.line('event', `[${kind}] ${JSON.stringify(data)}`);
  }

  line(kind, text) {
    const node = el('p', { class: `entry ${kind}`, 'data-testid': `transcript-${kind}`, text });
    this.root.append(node);
    return node;
  }

  on_message(data) {
    if (!this.message) {
      this.message = el('div', { class: 'entry message', 'data-testid': 'transcript-message' });
      this.root.append(this.message);
    }
    this.message.append(String(data.text ?? ''));
  }

  on_thought(data) {
    if (!this.thought) {
      this.thought = el('p', { class: 'thought-text' });
      this.root.append(el('details', { class: 'entry thought', 'data-testid': 'transcript-thought' },
        el('summary', { text: 'Thinking' }), this.thought));
    }
    this.thought.append(String(data.text ?? ''));
  }

  on_plan(data) {
    const list = el('ul', { class: 'plan', 'aria-label': 'Plan' });
    for (const entry of Array.isArray(data.entries) ? data.entries : []) {
      const status = String(entry.status ?? 'pending');
      list.append(el('li', { dataset: { status } },
        el('label', {}, el('input', { type: 'checkbox', disabled: true, checked: status === 'completed' }),
          ` ${entry.content ?? ''} `, el('span', { class: 'hint', text: `(${PLAN_MARK[status] || status})` }))));
    }
    const block = el('div', { class: 'entry plan-block', 'data-testid': 'transcript-plan' },
      el('p', { class: 'label', text: 'Plan' }), list);
    if (this.plan && this.plan.isConnected) this.plan.replaceWith(block);
    else this.root.append(block);
    this.plan = block;
  }

  on_tool_call(data) {
    const id = String(data.toolCallId ?? '');
    let tool = id ? this.tools.get(id) : undefined;
    if (!tool) {
      tool = { title: el('span', { class: 'tool-title' }), status: el('span', { class: 'status' }), body: el('div') };
      tool.node = el('div', { class: 'entry tool', 'data-testid': 'transcript-tool', dataset: { toolCallId: id } },
        el('p', {}, el('span', { class: 'label', text: 'Tool ' }), tool.title, ' ', tool.status), tool.body);
      if (id) this.tools.set(id, tool);
      this.root.append(tool.node);
    }
    if (data.title) tool.title.textContent = String(data.title);
    else if (!tool.title.textContent) tool.title.textContent = String(data.toolKind || id || 'a tool');
    if (data.status) {
      tool.status.textContent = `(${data.status})`;
      tool.node.dataset.status = String(data.status);
    }
    if (typeof data.diff === 'string' && data.diff.trim()) tool.body.append(diffBlock(data.diff.split('\n'), 'tool diff'));
    for (const item of Array.isArray(data.content) ? data.content : []) {
      if (item && item.type === 'diff') {
        tool.body.replaceChildren(diffBlock(textDiff(item), `change to ${item.path ?? 'a file'}`));
      } else if (item && item.type === 'content' && item.content && item.content.type === 'text') {
        tool.body.append(el('pre', { class: 'output', text: String(item.content.text ?? '') }));
      }
    }
  }

  on_question(data) {
    const question = data.question && typeof data.question === 'object' ? data.question : data;
    this.line('question', `Asked: ${question.message ?? ''}`);
  }

  on_answer(data) {
    const answer = data.answer ?? data.optionId;
    const shown = typeof answer === 'string' ? answer : answer == null ? `not answered (${data.outcome ?? ''})`
      : JSON.stringify(answer);
    this.line('answer', `Answered: ${shown}`);
  }

  on_turn_start(data) {
    this.plan = null;
    this.line('turn', `Turn started${data.prompt ? ': ' + data.prompt : ''}`);
  }

  on_turn_end(data) {
    this.line('turn', `Turn ended: ${data.stopReason || (data.error ? 'error' : 'end_turn')}${data.error ? ' (' + data.error + ')' : ''}`);
  }

  on_state(data) {
    this.line('state', `State: ${data.from ? data.from + ' → ' : ''}${data.state ?? ''}${data.action ? ' (' + data.action + ')' : ''}`);
  }

  on_progress(data) {
    this.line('progress', String(data.text ?? data.message ?? ''));
  }

  on_error(data) {
    this.line('error', `Error: ${data.text ?? data.message ?? data.error ?? ''}`);
  }
}
