import { escapeHtml } from '../shared/html.ts';

/**
 * A policy's Markdown as HTML, for a documented subset: ATX headings, paragraphs, `**bold**`,
 * `*italic*` (or with underscores), unordered and ordered lists (nested by indentation), inline
 * code and fenced code blocks, horizontal rules, and links to http(s) and mailto addresses.
 * Everything else is text: every character of the source is escaped, raw HTML included, and a
 * link to any other scheme (`javascript:`, `data:`) shows its text without a link. Headings start
 * at `h3` (`#` is `h3`), under the page's own `h1` and `h2`. Every step is linear in the size of
 * the text, so a body of any shape renders in bounded time.
 */
export function renderMarkdown(source: string): string {
  const lines = source.split(/\r\n|\r|\n/);
  const html: string[] = [];
  let paragraph: string[] = [];
  const endParagraph = () => {
    if (paragraph.length > 0) html.push(`<p>${renderInline(paragraph.join('\n'))}</p>`);
    paragraph = [];
  };
  let index = 0;
  while (index < lines.length) {
    const line = lines[index] ?? '';
    const fence = FENCE.exec(line);
    if (fence) {
      endParagraph();
      const code: string[] = [];
      index++;
      while (index < lines.length && !(lines[index] ?? '').trimStart().startsWith(fence[1] ?? '```')) {
        code.push(lines[index] ?? '');
        index++;
      }
      html.push(`<pre><code>${escapeHtml(code.join('\n'))}</code></pre>`);
      index++;
      continue;
    }
    if (line.trim() === '') {
      endParagraph();
      index++;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      endParagraph();
      const level = Math.min(6, (heading[1] ?? '#').length + HEADING_OFFSET);
      html.push(`<h${level}>${renderInline(headingText(heading[2] ?? ''))}</h${level}>`);
      index++;
      continue;
    }
    if (RULE.test(line)) {
      endParagraph();
      html.push('<hr>');
      index++;
      continue;
    }
    if (listItemOf(line)) {
      endParagraph();
      const items: ListItem[] = [];
      while (index < lines.length) {
        const current = lines[index] ?? '';
        const item = listItemOf(current);
        const last = items.at(-1);
        if (item) items.push(item);
        else if (current.trim() === '') {
          // Blank lines between items keep one list.
          const next = nextNonBlank(lines, index);
          if (!listItemOf(lines[next] ?? '')) break;
          index = next;
          continue;
        } else if (last && /^\s/.test(current)) last.text += `\n${current.trim()}`;
        else break;
        index++;
      }
      html.push(renderList(items));
      continue;
    }
    paragraph.push(line.trim());
    index++;
  }
  endParagraph();
  return html.join('\n');
}

const HEADING_OFFSET = 2;
const MAX_LIST_DEPTH = 6;
const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*)$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const NUMBERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;

interface ListItem {
  indent: number;
  ordered: boolean;
  start: number;
  text: string;
}

function listItemOf(line: string): ListItem | undefined {
  const bullet = BULLET.exec(line);
  if (bullet) return { indent: (bullet[1] ?? '').length, ordered: false, start: 1, text: bullet[2] ?? '' };
  const numbered = NUMBERED.exec(line);
  if (numbered) {
    const [, indent = '', start = '1', text = ''] = numbered;
    return { indent: indent.length, ordered: true, start: Number(start), text };
  }
  return undefined;
}

function nextNonBlank(lines: string[], from: number): number {
  let index = from;
  while (index < lines.length && (lines[index] ?? '').trim() === '') index++;
  return index;
}

/** A heading's text without the optional closing run of `#` (read backwards, not by a regex). */
function headingText(text: string): string {
  const trimmed = text.trimEnd();
  let end = trimmed.length;
  while (end > 0 && trimmed[end - 1] === '#') end--;
  if (end === trimmed.length) return trimmed;
  if (end === 0) return '';
  return SPACE.test(trimmed[end - 1] ?? '') ? trimmed.slice(0, end).trimEnd() : trimmed;
}

/** Items become a list, nested where an item is indented more than the one before it. */
function renderList(items: ListItem[]): string {
  const open: { indent: number; tag: 'ul' | 'ol' }[] = [];
  let html = '';
  const openList = (item: ListItem) => {
    const tag = item.ordered ? 'ol' : 'ul';
    open.push({ indent: item.indent, tag });
    html += item.ordered && item.start !== 1 ? `<ol start="${item.start}"><li>` : `<${tag}><li>`;
  };
  for (const item of items) {
    let top = open.at(-1);
    while (top && open.length > 1 && item.indent < top.indent) {
      html += `</li></${top.tag}>`;
      open.pop();
      top = open.at(-1);
    }
    const tag = item.ordered ? 'ol' : 'ul';
    if (!top || (item.indent > top.indent && open.length < MAX_LIST_DEPTH)) openList(item);
    else if (top.tag !== tag) {
      html += `</li></${top.tag}>`;
      open.pop();
      openList(item);
    } else html += '</li><li>';
    html += renderInline(item.text);
  }
  for (const level of open.reverse()) html += `</li></${level.tag}>`;
  return html;
}

type Delimiter = {
  kind: 'delimiter';
  text: string;
  canOpen: boolean;
  canClose: boolean;
  match?: 'open' | 'close';
};
type Token = { kind: 'html'; html: string } | Delimiter;

/** A link's text has no brackets and stays on its line; its address has no spaces or parentheses. */
const LINK = /\[([^[\]\n]{1,1000})\]\(([^()\s]{1,2000})\)/y;
const SAFE_URL = /^(https?:\/\/|mailto:)/i;
const PUNCTUATION = /[!-/:-@[-`{-~]/;
const WORD = /[\p{L}\p{N}]/u;
const SPACE = /\s/;

function renderInline(text: string, withLinks = true): string {
  const tokens: Token[] = [];
  let plain = '';
  const flush = () => {
    if (plain) tokens.push({ kind: 'html', html: escapeHtml(plain) });
    plain = '';
  };
  let index = 0;
  while (index < text.length) {
    const ch = text[index] ?? '';
    if (ch === '\\' && PUNCTUATION.test(text[index + 1] ?? '')) {
      plain += text[index + 1];
      index += 2;
      continue;
    }
    if (ch === '`') {
      const end = text.indexOf('`', index + 1);
      if (end !== -1) {
        flush();
        tokens.push({ kind: 'html', html: `<code>${escapeHtml(text.slice(index + 1, end))}</code>` });
        index = end + 1;
        continue;
      }
    }
    if (ch === '[' && withLinks) {
      LINK.lastIndex = index;
      const link = LINK.exec(text);
      if (link) {
        flush();
        const [whole, label = '', url = ''] = link;
        const shown = renderInline(label, false);
        tokens.push({
          kind: 'html',
          html: SAFE_URL.test(url)
            ? `<a href="${escapeHtml(url)}" rel="noopener noreferrer">${shown}</a>`
            : shown,
        });
        index += whole.length;
        continue;
      }
    }
    if (ch === '*' || ch === '_') {
      let end = index;
      while (text[end] === ch) end++;
      const before = text[index - 1] ?? ' ';
      const after = text[end] ?? ' ';
      let canOpen = !SPACE.test(after);
      let canClose = !SPACE.test(before);
      if (ch === '_') {
        canOpen &&= !WORD.test(before);
        canClose &&= !WORD.test(after);
      }
      flush();
      for (let run = end - index; run > 0; run -= run >= 2 ? 2 : 1) {
        tokens.push({ kind: 'delimiter', text: ch.repeat(run >= 2 ? 2 : 1), canOpen, canClose });
      }
      index = end;
      continue;
    }
    plain += ch;
    index++;
  }
  flush();
  matchDelimiters(tokens);
  return tokens
    .map((token) => {
      if (token.kind === 'html') return token.html;
      const tag = token.text.length === 2 ? 'strong' : 'em';
      if (token.match === 'open') return `<${tag}>`;
      if (token.match === 'close') return `</${tag}>`;
      return escapeHtml(token.text);
    })
    .join('');
}

/**
 * Pairs each closing delimiter with the nearest open one like it; what stays unpaired is text.
 * Closing a pair drops the delimiters opened inside it, so the tags always nest.
 */
function matchDelimiters(tokens: Token[]): void {
  const opened = new Map<string, { token: Delimiter; position: number }[]>();
  tokens.forEach((token, position) => {
    if (token.kind !== 'delimiter') return;
    const stack = opened.get(token.text) ?? [];
    opened.set(token.text, stack);
    const open = token.canClose ? stack.pop() : undefined;
    if (open) {
      open.token.match = 'open';
      token.match = 'close';
      for (const other of opened.values()) {
        while ((other.at(-1)?.position ?? -1) > open.position) other.pop();
      }
    } else if (token.canOpen) stack.push({ token, position });
  });
}
