// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderMarkdown } from '../../src/web/markdown.ts';

describe('the Markdown of policies', () => {
  it('renders headings (from h3), paragraphs, emphasis, code, rules and links', () => {
    assert.equal(
      renderMarkdown(
        [
          '# Access control #',
          '',
          'Access is granted on **least privilege** and',
          'reviewed *every* quarter (_see_ `iam-review`).',
          '',
          '---',
          '',
          '###### Contact',
          'Write to [security](mailto:security@example.com) or read [the guide](https://example.com/a_b?x=1&y=2).',
        ].join('\n'),
      ),
      [
        '<h3>Access control</h3>',
        '<p>Access is granted on <strong>least privilege</strong> and\nreviewed <em>every</em> quarter (<em>see</em> <code>iam-review</code>).</p>',
        '<hr>',
        '<h6>Contact</h6>',
        '<p>Write to <a href="mailto:security@example.com" rel="noopener noreferrer">security</a> or read <a href="https://example.com/a_b?x=1&amp;y=2" rel="noopener noreferrer">the guide</a>.</p>',
      ].join('\n'),
    );
  });

  it('renders lists, nested by indentation, ordered ones from their first number', () => {
    assert.equal(
      renderMarkdown('- one\n- two\n  - two a\n  - two b\n    continued\n\n- three\n\n3. third\n4. fourth'),
      '<ul><li>one</li><li>two<ul><li>two a</li><li>two b\ncontinued</li></ul></li><li>three</li></ul>' +
        '<ol start="3"><li>third</li><li>fourth</li></ol>',
    );
  });

  it('keeps fenced code as written, escaped', () => {
    assert.equal(
      renderMarkdown('```sh\n<b>rm -rf</b> **not bold**\n```\nafter'),
      '<pre><code>&lt;b&gt;rm -rf&lt;/b&gt; **not bold**</code></pre>\n<p>after</p>',
    );
  });

  it('lets no HTML through and links only to http(s) and mailto', () => {
    const rendered = renderMarkdown(
      [
        '<script>alert(1)</script>',
        '<img src=x onerror="alert(2)">',
        '[click](javascript:alert(3)) [data](data:text/html;base64,PHNjcmlwdD4=) [vb](JAVASCRIPT:x)',
        '[x](https://example.com/"onmouseover="alert(4))',
        '**<i>bold</i>** `<code>`',
      ].join('\n\n'),
    );
    assert.doesNotMatch(rendered, /<(script|img|i)\b/);
    assert.doesNotMatch(rendered, /href="(javascript|data)/i);
    assert.doesNotMatch(rendered, /<a [^>]*onmouseover/);
    assert.match(rendered, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(rendered, /<p>\[click\]\(javascript:alert\(3\)\) data vb<\/p>/);
    assert.match(rendered, /<strong>&lt;i&gt;bold&lt;\/i&gt;<\/strong> <code>&lt;code&gt;<\/code>/);
  });

  it('leaves unpaired or mid-word markers and escaped characters as text, and always nests tags', () => {
    assert.equal(renderMarkdown('5 * 3 * 2 and snake_case_name'), '<p>5 * 3 * 2 and snake_case_name</p>');
    assert.equal(renderMarkdown('\\*not em\\* and \\[not a link\\]'), '<p>*not em* and [not a link]</p>');
    assert.equal(renderMarkdown('**a *b** c*'), '<p><strong>a *b</strong> c*</p>');
    assert.equal(renderMarkdown('*a **b* c**'), '<p><em>a **b</em> c**</p>');
    assert.equal(renderMarkdown('`unclosed and [unclosed'), '<p>`unclosed and [unclosed</p>');
  });

  it('renders hostile shapes in bounded time', () => {
    const shapes = [
      '*a '.repeat(60_000),
      `${'**a '.repeat(30_000)}${'a* '.repeat(30_000)}`,
      `${'['.repeat(100_000)}]`,
      `# a${' '.repeat(100_000)}x`,
      `- a${'\n'.repeat(100_000)}`,
      `${'  '.repeat(50_000)}- deep`,
      '`'.repeat(100_001),
      `${'- - '.repeat(50_000)}x`,
    ];
    for (const shape of shapes) {
      const started = performance.now();
      renderMarkdown(shape);
      assert.ok(performance.now() - started < 1000, `${shape.slice(0, 10)}… took too long`);
    }
  });
});
