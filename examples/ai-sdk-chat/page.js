/**
 * The chat page: the AI SDK's own client (`AbstractChat` with `DefaultChatTransport`, what `useChat` runs
 * on) with a small state that renders into the page, no UI framework. The chat's id is in the address
 * (`?chat=sess_…`); on load the page shows the stored messages and, like `useChat({ resume: true })`,
 * re-attaches to an answer still being written (GET /api/chat/:id/stream). Only the new message is sent:
 * the server keeps the history.
 */
import { AbstractChat, DefaultChatTransport } from 'ai';

const list = document.getElementById('messages');
const status = document.getElementById('status');
const form = document.getElementById('composer');

function textOf(message) {
  return message.parts
    .map((part) => {
      if (part.type === 'text') return part.text;
      if (part.type.startsWith('tool-')) return `[${part.type.slice(5)}: ${part.state}]\n`;
      return '';
    })
    .join('');
}

/** The chat's state, as ChatState: every change renders the page. */
class PageState {
  #status = 'ready';
  constructor(messages, render) {
    this.messages = messages;
    this.error = undefined;
    this.render = render;
  }
  get status() {
    return this.#status;
  }
  set status(value) {
    this.#status = value;
    this.render();
  }
  pushMessage = (message) => {
    this.messages = [...this.messages, message];
    this.render();
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
    this.render();
  };
  replaceMessage = (index, message) => {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
    this.render();
  };
  snapshot = (thing) => structuredClone(thing);
}

class PageChat extends AbstractChat {}

async function chatId() {
  const url = new URL(location.href);
  const known = url.searchParams.get('chat');
  if (known !== null) return known;
  const response = await fetch('/api/chats', { method: 'POST' });
  const { id } = await response.json();
  url.searchParams.set('chat', id);
  history.replaceState(null, '', url);
  return id;
}

const id = await chatId();
const loaded = await (await fetch(`/api/chat/${encodeURIComponent(id)}`)).json();
const state = new PageState(loaded.messages, () => {
  list.replaceChildren(
    ...state.messages.map((message) => {
      const item = document.createElement('li');
      item.dataset.role = message.role;
      item.dataset.id = message.id;
      item.textContent = textOf(message);
      return item;
    }),
  );
  status.textContent = state.status;
  document.body.dataset.status = state.status;
});
const chat = new PageChat({
  id,
  state,
  transport: new DefaultChatTransport({
    api: '/api/chat',
    prepareSendMessagesRequest: ({ id: chatIdToSend, messages }) => ({
      body: { id: chatIdToSend, message: messages.at(-1) },
    }),
  }),
  onError: (error) => {
    status.textContent = `error: ${error.message}`;
  },
});
state.render();
document.body.dataset.loaded = 'true';

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const input = form.elements.namedItem('text');
  const text = input.value.trim();
  if (text === '') return;
  input.value = '';
  void chat.sendMessage({ text });
});

// As useChat({ resume: true }): re-attach to an answer the server is still writing.
await chat.resumeStream();
