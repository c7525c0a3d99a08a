// app.js: the web board — columns of task cards, a new-task form, a task view with its live transcript,
// questions, follow-ups, diff and actions, a roster of agents and the board's status line — over the
// envelope of board.live (wire.js). Every agent-provided string reaches the DOM as text (dom.js).
//
// Stable hooks for browser tests (ids, and data-testid where a list holds many):
//   #new-task-form: #new-task-prompt, #new-task-title, #new-task-agent (options from agents.list),
//     #new-task-base, #new-task-priority, #new-task-blockers, #new-task-hold, #new-task-submit,
//     #new-task-error (why a create was refused)
//   #columns > section[data-state=STATE] (data-testid="column-STATE"), holding the cards:
//     article#task-card-ID [data-testid="task-card"][data-task-id=ID][data-state=STATE]; its button
//     [data-testid="task-open"] opens the task view; [data-testid="needs-input"] badge; [data-testid="waiting"]
//   #task-view [data-task-id=ID][data-state=STATE]: #task-title, #task-meta, #task-waiting, #task-error,
//     #task-release, #task-accept, #task-merge, #task-discard, #task-cancel (hidden when not applicable),
//     #transcript (entries: [data-testid=transcript-message|transcript-thought|transcript-plan|transcript-tool
//     (data-status)|transcript-question|transcript-answer|...]; #transcript[data-seq] = last seq shown),
//     #question-form: #question-text, #question-options > button[data-testid="question-option"][data-option-id=ID]
//     (a schema question: #question-answer textarea and #question-submit),
//     #prompt-form: #prompt-text, #prompt-submit; #diff-refresh, #diff > details[data-testid="diff-file"][data-path]
//   #agents-body > tr[data-agent-id=ID]; #status-line; #connection[data-state=online|offline|connecting];
//   #principal; #logout-form / #logout. Opening a task sets location.hash to #task=ID (and reads it).
import { byId, el, elapsed, say, show } from './dom.js';
import { Transcript, renderDiff } from './transcript.js';
import { Wire } from './wire.js';

const COLUMNS = [
  ['held', 'Held'], ['queued', 'Queued'], ['running', 'Running'], ['needs_input', 'Needs input'],
  ['review', 'Review'], ['failed', 'Failed'], ['cancelled', 'Cancelled'], ['done', 'Done'], ['discarded', 'Discarded'],
];
const LIVE = new Set(['held', 'queued', 'running', 'needs_input']);
const ACTIONS = { // button id -> [states it applies in, request action, payload extras]
  'task-release': [['held'], 'orchestrator.trigger', {}],
  'task-accept': [['review'], 'task.accept', { merge: false }],
  'task-merge': [['review'], 'task.accept', { merge: true }],
  'task-discard': [['review', 'failed', 'cancelled'], 'task.discard', {}],
  'task-cancel': [['held', 'queued', 'running', 'needs_input'], 'task.cancel', {}],
};
const PROMPTABLE = new Set(['review', 'failed', 'cancelled']);

const tasks = new Map();
const view = { id: null, seq: 0, transcript: null };
let wire = null;
let refreshTimer = null;

function errorText(error) {
  return error && error.message ? error.message : String(error);
}

// ---- the board ----------------------------------------------------------------------------------------
function buildColumns() {
  const root = byId('columns');
  for (const [state, title] of COLUMNS) {
    root.append(el('section', { class: 'column', 'data-testid': `column-${state}`, dataset: { state }, 'aria-labelledby': `column-${state}-title` },
      el('h3', { id: `column-${state}-title` }, title, ' ', el('span', { class: 'count', id: `column-${state}-count`, text: '0' })),
      el('div', { class: 'cards', id: `column-${state}` })));
  }
}

function card(task) {
  const times = el('span', { class: 'elapsed', dataset: { since: task.startedAt || task.createdAt || '', until: task.endedAt || '' },
    text: elapsed(task.startedAt || task.createdAt, task.endedAt) });
  const node = el('article', { class: 'card', id: `task-card-${task.id}`, 'data-testid': 'task-card', dataset: { taskId: task.id, state: task.state } },
    el('h4', {}, el('button', { type: 'button', class: 'link', 'data-testid': 'task-open', text: task.title || task.id })),
    el('p', { class: 'meta' }, el('span', { text: task.agent || '' }), ' · ',
      el('span', { class: `priority priority-${task.priority}`, text: task.priority || '' }), ' · ', times),
    task.branch ? el('p', { class: 'meta' }, el('code', { text: task.branch })) : null,
    task.state === 'needs_input' ? el('p', { class: 'badge', 'data-testid': 'needs-input', text: 'Needs input' }) : null,
    task.waiting && LIVE.has(task.state) ? el('p', { class: 'waiting', 'data-testid': 'waiting', text: task.waiting }) : null,
    task.progress && task.state === 'running' ? el('p', { class: 'hint', text: task.progress }) : null);
  node.querySelector('button').addEventListener('click', () => openTask(task.id));
  return node;
}

function renderCard(task) {
  const old = byId(`task-card-${task.id}`);
  const column = byId(`column-${task.state}`);
  if (!column) return;
  const fresh = card(task);
  const hadFocus = old && old.contains(document.activeElement);
  if (old && old.parentElement === column) old.replaceWith(fresh);
  else {
    if (old) old.remove();
    column.prepend(fresh);
  }
  if (hadFocus) fresh.querySelector('button').focus();
}

function counts() {
  for (const [state] of COLUMNS) say(byId(`column-${state}-count`), String(byId(`column-${state}`).childElementCount));
}

function upsert(task) {
  if (!task || typeof task.id !== 'string') return;
  tasks.set(task.id, task);
  renderCard(task);
  counts();
  if (view.id === task.id) renderTaskHead(task);
}

function tick() {
  for (const span of document.querySelectorAll('.elapsed[data-since]')) {
    if (!span.dataset.until) say(span, elapsed(span.dataset.since, ''));
  }
}

// ---- roster and status ----------------------------------------------------------------------------------
function renderAgents(agents) {
  const body = byId('agents-body');
  const select = byId('new-task-agent');
  const chosen = select.value;
  body.replaceChildren();
  select.replaceChildren(el('option', { value: '', text: "the board's default" }));
  for (const agent of agents) {
    body.append(el('tr', { dataset: { agentId: agent.id } },
      el('th', { scope: 'row', text: agent.name && agent.name !== agent.id ? `${agent.name} (${agent.id})` : agent.id }),
      el('td', { text: agent.ready ? 'yes' : 'no' }), el('td', { text: String(agent.running ?? 0) }),
      el('td', { text: String(agent.queued ?? 0) })));
    select.append(el('option', { value: agent.id, text: agent.id }));
  }
  select.value = agents.some((agent) => agent.id === chosen) ? chosen : '';
}

async function refresh() {
  refreshTimer = null;
  try {
    const [status, roster] = await Promise.all([wire.request('orchestrator.status'), wire.request('agents.list')]);
    say(byId('status-line'), `${status.running ? 'Running' : 'Stopped'} · ${status.active_agents ?? 0} of ${status.max_concurrent ?? '?'} agents busy · ${status.queued_tasks ?? 0} queued`);
    renderAgents(Array.isArray(roster.agents) ? roster.agents : []);
  } catch (error) {
    say(byId('status-line'), `Status unavailable: ${errorText(error)}`);
  }
}

function refreshSoon() {
  if (refreshTimer === null) refreshTimer = setTimeout(refresh, 400);
}

// ---- the task view ----------------------------------------------------------------------------------------
function renderTaskHead(task) {
  const root = byId('task-view');
  root.dataset.taskId = task.id;
  root.dataset.state = task.state;
  say(byId('task-title'), task.title || task.id);
  const parts = [`state ${task.state}`, `agent ${task.agent}`, `priority ${task.priority}`];
  if (task.branch) parts.push(`branch ${task.branch}`);
  if (task.base) parts.push(`base ${task.base}`);
  if (task.blockedBy && task.blockedBy.length) parts.push(`blocked by ${task.blockedBy.join(', ')}`);
  say(byId('task-meta'), parts.join(' · '));
  const waiting = byId('task-waiting');
  say(waiting, task.waiting || task.error || '');
  show(waiting, Boolean((task.waiting && LIVE.has(task.state)) || task.error));
  for (const [id, [states]] of Object.entries(ACTIONS)) show(byId(id), states.includes(task.state));
  show(byId('prompt-form'), PROMPTABLE.has(task.state));
  renderQuestion(task);
}

function renderQuestion(task) {
  const form = byId('question-form');
  const question = task.state === 'needs_input' && task.question ? task.question : null;
  show(form, Boolean(question));
  const options = byId('question-options');
  if (!question) {
    options.replaceChildren();
    return;
  }
  const key = JSON.stringify(question);
  if (form.dataset.key === key) return;
  form.dataset.key = key;
  say(byId('question-text'), question.message || 'The agent asks:');
  options.replaceChildren();
  if (Array.isArray(question.options) && question.options.length) {
    for (const option of question.options) {
      const button = el('button', { type: 'button', 'data-testid': 'question-option', dataset: { optionId: option.id, kind: option.kind || '' },
        class: String(option.kind || '').startsWith('reject') ? 'danger' : '', text: option.name || option.id });
      button.addEventListener('click', () => act('task.answer', { answer: option.id }));
      options.append(button);
    }
  } else {
    const area = el('textarea', { id: 'question-answer', rows: '3', 'aria-describedby': 'question-text' });
    const submit = el('button', { type: 'button', id: 'question-submit', text: 'Answer' });
    submit.addEventListener('click', () => {
      let answer = area.value;
      if (question.schema) {
        try {
          answer = JSON.parse(area.value);
        } catch {
          say(byId('task-error'), 'This question wants a JSON object as its answer.');
          return;
        }
      }
      act('task.answer', { answer });
    });
    options.append(el('label', { for: 'question-answer', text: question.schema ? 'Your answer (JSON)' : 'Your answer' }), area, submit);
  }
}

async function act(action, extra) {
  const id = view.id;
  if (!id) return;
  say(byId('task-error'), '');
  try {
    const result = await wire.request(action, { task_id: id, ...extra });
    if (result && result.id === id && result.state) upsert(result);
    if (result && result.task && result.task.id === id) upsert(result.task);
  } catch (error) {
    say(byId('task-error'), errorText(error));
  }
}

async function subscribe() {
  if (!view.id) return;
  const id = view.id;
  try {
    const answer = await wire.request('task.subscribe', { task_id: id, after: view.seq });
    if (view.id === id && typeof answer.seq === 'number' && answer.seq < view.seq) view.seq = answer.seq;
  } catch (error) {
    say(byId('task-error'), errorText(error));
  }
}

function openTask(id) {
  if (view.id === id) {
    byId('task-title').focus();
    return;
  }
  if (view.id && wire) wire.request('task.unsubscribe', { task_id: view.id }).catch(() => {});
  view.id = id;
  view.seq = 0;
  view.transcript.reset();
  byId('transcript').dataset.seq = '0';
  byId('diff').replaceChildren();
  byId('question-form').dataset.key = '';
  say(byId('task-error'), '');
  show(byId('task-view'), true);
  if (location.hash !== `#task=${id}`) history.replaceState(null, '', `#task=${encodeURIComponent(id)}`);
  const known = tasks.get(id);
  if (known) renderTaskHead(known);
  else wire.request('task.get', { task_id: id }).then(upsert, (error) => say(byId('task-error'), errorText(error)));
  subscribe();
  byId('task-title').focus();
}

function closeTask() {
  if (view.id && wire) wire.request('task.unsubscribe', { task_id: view.id }).catch(() => {});
  const id = view.id;
  view.id = null;
  show(byId('task-view'), false);
  history.replaceState(null, '', location.pathname);
  const back = id && byId(`task-card-${id}`);
  if (back) back.querySelector('button').focus();
}

function taskEvent(payload, action) {
  if (payload.task_id !== view.id || typeof payload.seq !== 'number' || payload.seq <= view.seq) return;
  view.seq = payload.seq;
  byId('transcript').dataset.seq = String(payload.seq);
  const kind = payload.type || action.replace(/^task\./, '');
  view.transcript.add(kind, payload.data && typeof payload.data === 'object' ? payload.data : {});
}

// ---- the wire ----------------------------------------------------------------------------------------
function notified(action, payload) {
  if (action === 'task.updated') {
    upsert(payload.task);
    refreshSoon();
  } else if (action.startsWith('task.') || action.startsWith('acp.')) {
    taskEvent(payload, action);
  } else if (action === 'error') {
    say(byId('status-line'), `Error: ${payload.message || payload.code || 'unknown'}`);
  }
}

async function opened(session) {
  byId('logout-csrf').value = session.csrf || '';
  show(byId('logout-form'), Boolean(session.auth && session.csrf));
  say(byId('principal'), session.principal ? `Signed in as ${session.principal}` : '');
  show(byId('principal'), Boolean(session.principal));
  try {
    const answer = await wire.request('board.subscribe');
    const listed = Array.isArray(answer.tasks) ? answer.tasks : [];
    for (const task of listed) upsert(task);
    const seen = new Set(listed.map((task) => task.id));
    for (const id of [...tasks.keys()]) {
      if (!seen.has(id)) {
        tasks.delete(id);
        const old = byId(`task-card-${id}`);
        if (old) old.remove();
      }
    }
    counts();
  } catch (error) {
    say(byId('status-line'), `Cannot load the board: ${errorText(error)}`);
  }
  refresh();
  subscribe();
}

function connectionState(state, delay) {
  const node = byId('connection');
  node.dataset.state = state;
  say(node, state === 'offline' && delay ? `offline, retrying in ${Math.ceil(delay / 1000)} s` : state);
}

// ---- forms ------------------------------------------------------------------------------------------------
async function createTask(event) {
  event.preventDefault();
  const error = byId('new-task-error');
  const prompt = byId('new-task-prompt').value;
  if (!prompt.trim()) {
    say(error, 'Write a prompt for the agent first.');
    byId('new-task-prompt').focus();
    return;
  }
  const payload = { description: prompt, priority: byId('new-task-priority').value };
  const fields = { title: 'new-task-title', agent_type: 'new-task-agent', base: 'new-task-base' };
  for (const [key, id] of Object.entries(fields)) if (byId(id).value.trim()) payload[key] = byId(id).value.trim();
  const blockers = byId('new-task-blockers').value.split(/[\s,]+/).filter(Boolean);
  if (blockers.length) payload.blocked_by = blockers;
  if (byId('new-task-hold').checked) payload.hold = true;
  say(error, '');
  const submit = byId('new-task-submit');
  submit.disabled = true;
  try {
    const task = await wire.request('task.create', payload);
    upsert(task);
    byId('new-task-form').reset();
    openTask(task.id);
  } catch (failure) {
    say(error, errorText(failure));
  } finally {
    submit.disabled = false;
  }
}

async function sendPrompt(event) {
  event.preventDefault();
  const text = byId('prompt-text');
  if (!text.value.trim()) return;
  await act('orchestrator.prompt', { prompt: text.value });
  if (!byId('task-error').textContent) text.value = '';
}

async function showDiff() {
  if (!view.id) return;
  const id = view.id;
  say(byId('task-error'), '');
  try {
    const diff = await wire.request('task.diff', { task_id: id });
    if (view.id === id) renderDiff(byId('diff'), diff);
  } catch (error) {
    say(byId('task-error'), errorText(error));
  }
}

function fromHash() {
  const found = /^#task=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (found && found[1] !== view.id) openTask(found[1]);
}

function main() {
  buildColumns();
  view.transcript = new Transcript(byId('transcript'));
  byId('new-task-form').addEventListener('submit', createTask);
  byId('prompt-form').addEventListener('submit', sendPrompt);
  byId('question-form').addEventListener('submit', (event) => event.preventDefault());
  byId('diff-refresh').addEventListener('click', showDiff);
  byId('task-close').addEventListener('click', closeTask);
  for (const [id, [, action, extra]] of Object.entries(ACTIONS)) byId(id).addEventListener('click', () => act(action, extra));
  window.addEventListener('hashchange', fromHash);
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && view.id && byId('task-view').contains(document.activeElement)) closeTask();
  });
  setInterval(tick, 1000);
  let first = true;
  wire = new Wire({
    onOpen: (session) => {
      opened(session);
      if (first) {
        first = false;
        fromHash();
      }
    },
    onNotify: notified,
    onState: connectionState,
  });
  wire.connect();
}

main();
